package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// What the disruption-budget tests watch and how they interrupt fix.

// bgServing reports whether a pod serves: Ready and not being deleted (the test's own reading).
func bgServing(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyWatch follows the Ready count of a workload's pods from a watch.
type readyWatch struct {
	mu       sync.Mutex
	min, max int
	cancel   context.CancelFunc
	done     chan struct{}
}

// watchReady starts watching the pods the selector picks in ns; stop returns the least and most
// Ready pods seen.
func watchReady(t *testing.T, cs kubernetes.Interface, ns, selector string) *readyWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	wi, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	rw := &readyWatch{cancel: cancel, done: make(chan struct{})}
	state := map[types.UID]bool{}
	for _, p := range list.Items {
		state[p.UID] = bgServing(&p)
	}
	count := func() int {
		n := 0
		for _, s := range state {
			if s {
				n++
			}
		}
		return n
	}
	rw.min, rw.max = count(), count()
	go func() {
		defer close(rw.done)
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			state[p.UID] = ev.Type != watch.Deleted && bgServing(p)
			n := count()
			rw.mu.Lock()
			rw.min, rw.max = min(rw.min, n), max(rw.max, n)
			rw.mu.Unlock()
		}
	}()
	return rw
}

func (rw *readyWatch) stop() (int, int) {
	rw.cancel()
	<-rw.done
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.min, rw.max
}

// runInterrupted runs the plugin and sends it SIGINT once a line of its stderr contains after.
func runInterrupted(t *testing.T, kubeconfig, after string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pluginBinary(t), args...)
	cmd.Env = commandEnv(t, kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	signalled := false
	for sc.Scan() {
		errOut.WriteString(sc.Text() + "\n")
		if !signalled && strings.Contains(sc.Text(), after) {
			signalled = true
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Errorf("send SIGINT: %v", err)
			}
		}
	}
	err = cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%v\nstderr:\n%s", ctx.Err(), &errOut)
	case errors.As(err, &exitErr):
		exitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if !signalled {
		t.Errorf("no stderr line contained %q: never interrupted", after)
	}
	return out.String(), errOut.String(), exitCode
}
