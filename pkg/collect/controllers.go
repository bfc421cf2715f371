package collect

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readControllers reads the workloads controllers run as (every namespace when allowed, else the
// controllers' default namespaces), then the leader Leases and pods of the kruise-manager.
func (col *collector) readControllers(ctx context.Context) error {
	deps, errs := col.readControllerWorkloads(ctx)

	// The kruise-manager's leader Lease and pods.
	if mgr := kruise.FindManager(deps, col.opts.Settings.KruiseNamespace, col.opts.Settings.KruiseDeployment); mgr != nil {
		if err := col.readLeaderLease(ctx, mgr, true); err != nil {
			errs = append(errs, err)
		}
		ns := mgr.Deployment.Namespace
		sel, err := metav1.LabelSelectorAsSelector(mgr.Deployment.Spec.Selector)
		if err == nil {
			l, err := get(ctx, col, func(ctx context.Context) (*corev1.PodList, error) {
				return col.c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
			})
			if err != nil {
				errs = append(errs, readErr("list", "pods in "+ns, err))
			} else {
				col.add(func(s *snapshot.Snapshot) {
					for i := range l.Items {
						s.ControllerPods = append(s.ControllerPods, &l.Items[i])
					}
				})
			}
		}
	}
	return fault.Join(errs...)
}

// readLogs reads the kruise-manager leader's recent log, bounded in time and size, and keeps
// only the expectation lines and the SidecarSet controller's "update in flight" lines.
func (col *collector) readLogs(ctx context.Context) error {
	mgr := kruise.FindManager(col.snap.Deployments, col.opts.Settings.KruiseNamespace, col.opts.Settings.KruiseDeployment)
	if mgr == nil {
		return nil
	}
	ns := mgr.Deployment.Namespace
	lease, ok := col.snap.Lease(mgr.LeaseNamespace, mgr.LeaseName)
	if !ok || lease.Spec.HolderIdentity == nil {
		return nil
	}
	pod := kruise.HolderPod(*lease.Spec.HolderIdentity)
	// The apiserver answers pods/log of a pod bound to no node with an empty body, not an error.
	if p, ok := col.snap.ControllerPod(ns, pod); ok && p.Spec.NodeName == "" {
		return fmt.Errorf("get pods/log of %s/%s: the leader pod is not bound to a node", ns, pod)
	}
	since := int64(col.opts.LogSince.Seconds())
	limit := col.opts.LogLimitBytes
	// A log cut short is read again whole.
	kept, err := get(ctx, col, func(ctx context.Context) (string, error) {
		stream, err := col.c.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{
			Container: kruise.ManagerContainer, SinceSeconds: &since, LimitBytes: &limit,
		}).Stream(ctx)
		if err != nil {
			return "", readErr("get", "pods/log of "+ns+"/"+pod, err)
		}
		defer stream.Close()
		var kept strings.Builder
		sc := bufio.NewScanner(io.LimitReader(stream, limit))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if line := sc.Text(); kruise.IsExpectationLogLine(line) || kruise.IsSidecarSetInFlightLine(line) {
				kept.WriteString(line)
				kept.WriteByte('\n')
			}
		}
		if err := sc.Err(); err != nil {
			return "", fmt.Errorf("read pods/log of %s/%s: %w", ns, pod, err)
		}
		return kept.String(), nil
	})
	if err != nil {
		return err
	}
	col.add(func(s *snapshot.Snapshot) { s.Logs[ns+"/"+pod] = kept })
	return nil
}
