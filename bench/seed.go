package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The population's fixed shape. Pods come in groups of groupSize, each group one workload in one
// namespace (a Deployment, a CloneSet, a StatefulSet or a DaemonSet); groups are spread
// round-robin over the namespaces.
const (
	namespaces = 1000
	nodes      = 500
	// deadNodes are the first nodes: NotReady, heartbeat an hour old, as after a kubelet died.
	deadNodes = 5
	groupSize = 20
	// Nodes are labelled in pools of groupSize (poolLabel); a DaemonSet runs on one pool. Pool 0
	// holds the dead nodes and runs none.
	poolLabel = "example.com/node-pool"
	// Every cloneSetEvery-th group is a CloneSet. Of every setsEvery groups one is a StatefulSet and
	// one a DaemonSet; the others are Deployments, each with its ReplicaSet.
	cloneSetEvery = 4
	setsEvery     = 40
	// One Deployment in stalledDeploymentEvery, and one StatefulSet and one DaemonSet in
	// stalledSetEvery, has a rollout stuck the way its controller leaves it.
	stalledDeploymentEvery = 100
	stalledSetEvery        = 10
	// One pod in stuckEvery is stuck in a state a check diagnoses.
	stuckEvery  = 200
	stuckOffset = 7
	// One CloneSet in frozenEvery has a spec its controller never observed (expectations).
	frozenEvery = 100
	// One pod in warningEvery has a Warning event, one in normalEvery a Normal one.
	warningEvery = 10
	normalEvery  = 5
)

// Field managers as the real writers of these objects appear in managedFields.
const (
	managerKCM     = "kube-controller-manager"
	managerKruise  = "manager"
	managerKubelet = "kubelet"
)

const (
	// finalizerUnowned is a finalizer no controller in the cluster handles.
	finalizerUnowned = "example.com/cleanup"
	// hookLabel is the label the CloneSets' preNormal hook waits for.
	hookLabel = "example.com/warmed-up"
)

// seeder creates the population through the API, with bounded concurrency and retries.
type seeder struct {
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	workers int
	// created counts API writes, for the seeding rate.
	created atomic.Int64
	// base is when the population "started": object timestamps are set relative to it.
	base time.Time
}

// sha64 is the hex SHA-256 of s, the shape of image digests and container IDs.
func sha64(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func nsName(i int) string   { return fmt.Sprintf("team-%04d", i) }
func nodeName(i int) string { return fmt.Sprintf("node-%03d", i) }

// hash10 is a stable, kube-looking hash suffix of s.
func hash10(s string) string {
	sum := sha256.Sum256([]byte(s))
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, 10)
	for i := range out {
		out[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(out)
}

// retry runs f until it succeeds, fails with a non-retryable error, or five attempts failed.
// AlreadyExists counts as success so a resumed seeding is idempotent.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 5 {
		err = f()
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return nil
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err):
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(200*(attempt+1)) * time.Millisecond):
		}
	}
	return err
}

// parallel runs work(i) for i in [from, to) on the seeder's workers, stopping at the first error.
func (s *seeder) parallel(ctx context.Context, from, to int, work func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() {
			for i := range next {
				if err := work(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// seedBase creates what does not grow with the pods: namespaces and their usual content, nodes
// with their heartbeat Leases, the OpenKruise manager's Deployment, and one namespace left
// Terminating.
func (s *seeder) seedBase(ctx context.Context) error {
	if err := s.parallel(ctx, 0, namespaces, s.namespace); err != nil {
		return fmt.Errorf("seed namespaces: %w", err)
	}
	if err := s.parallel(ctx, 0, nodes, s.node); err != nil {
		return fmt.Errorf("seed nodes: %w", err)
	}
	if err := s.kruiseManager(ctx); err != nil {
		return fmt.Errorf("seed kruise-manager: %w", err)
	}
	return s.heldNamespace(ctx)
}

// toAny converts labels to the map type of unstructured objects.
func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
