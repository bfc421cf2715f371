package collect

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// maxCAPILines bounds the log lines kept: the newest ones, enough to count and date the refusals.
const maxCAPILines = 500

// readClusterAPILog reads the Cluster API core controller leader's recent log, bounded in time and
// size like the kruise-manager's, and keeps only the lines of finalizer updates the apiserver
// refused. The controllers log these (controller-runtime's "Reconciler error") and record no
// Event, so the log is the first source of the re-add race (docs/domain.md).
func (col *collector) readClusterAPILog(ctx context.Context) error {
	if !col.snap.Installed[GroupClusterAPI] {
		return nil
	}
	d := clusterAPIManager(col.snap.Deployments)
	if d == nil {
		return nil
	}
	pod, err := col.clusterAPILeader(ctx, d)
	if err != nil || pod == "" {
		return err
	}
	container := knowledge.ClusterAPIContainer
	for _, c := range d.Spec.Template.Spec.Containers {
		if knowledge.ImageRepository(c.Image) == knowledge.ClusterAPIImage {
			container = c.Name
		}
	}
	since := int64(col.opts.LogSince.Seconds())
	limit := col.opts.LogLimitBytes
	// A log cut short is read again whole.
	lines, err := get(ctx, col, func(ctx context.Context) ([]string, error) {
		stream, err := col.c.Kube.CoreV1().Pods(d.Namespace).GetLogs(pod, &corev1.PodLogOptions{
			Container: container, SinceSeconds: &since, LimitBytes: &limit, Timestamps: true,
		}).Stream(ctx)
		if err != nil {
			return nil, readErr("get", "pods/log of "+d.Namespace+"/"+pod, err)
		}
		defer stream.Close()
		lines, err := refusedFinalizerLines(io.LimitReader(stream, limit))
		if err != nil {
			return nil, fmt.Errorf("read pods/log of %s/%s: %w", d.Namespace, pod, err)
		}
		return lines, nil
	})
	if err != nil {
		return err
	}
	col.add(func(s *snapshot.Snapshot) {
		s.ClusterAPILog = &snapshot.ControllerLog{Namespace: d.Namespace, Pod: pod, Container: container,
			Since: col.opts.LogSince, LimitBytes: limit, Lines: lines}
	})
	return nil
}

// refusedFinalizerLines keeps the newest lines that carry the apiserver's refusal to add a
// finalizer; nothing else of the log (which may name any object) is kept.
func refusedFinalizerLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, knowledge.FinalizerReaddMessage) {
			out = append(out, line)
			if len(out) > maxCAPILines {
				out = out[1:]
			}
		}
	}
	return out, sc.Err()
}

// clusterAPIManager finds the core controller's Deployment: at its default place, else by image.
func clusterAPIManager(deps []*appsv1.Deployment) *appsv1.Deployment {
	w := knowledge.ClusterAPIManager
	var byImage *appsv1.Deployment
	for _, d := range deps {
		if d.Namespace == w.Namespace && d.Name == w.Name {
			return d
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if byImage == nil && knowledge.ImageRepository(c.Image) == knowledge.ClusterAPIImage {
				byImage = d
			}
		}
	}
	return byImage
}

// clusterAPILeader names the leader pod: the holder of the leader Lease (controller-runtime's
// identity is "<pod name>_<uuid>"), else the Deployment's only running pod when it runs without
// leader election.
func (col *collector) clusterAPILeader(ctx context.Context, d *appsv1.Deployment) (string, error) {
	l, err := get(ctx, col, func(ctx context.Context) (*coordinationv1.Lease, error) {
		return col.c.Kube.CoordinationV1().Leases(d.Namespace).Get(ctx, knowledge.ClusterAPILeaderLease, metav1.GetOptions{})
	})
	switch {
	case err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "":
		id := *l.Spec.HolderIdentity
		if i := strings.LastIndexByte(id, '_'); i > 0 {
			id = id[:i]
		}
		return id, nil
	case err != nil && !apierrors.IsNotFound(err):
		return "", readErr("get", "Lease "+d.Namespace+"/"+knowledge.ClusterAPILeaderLease, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return "", nil
	}
	pods, err := get(ctx, col, func(ctx context.Context) (*corev1.PodList, error) {
		return col.c.Kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	})
	if err != nil {
		return "", readErr("list", "pods in "+d.Namespace, err)
	}
	var running []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p.Name)
		}
	}
	if len(running) == 1 {
		return running[0], nil
	}
	return "", nil
}
