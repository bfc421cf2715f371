package rollout

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// daemonView is what the scan read of kruise-daemon, which applies an in-place update of env
// from metadata by restarting the containers and reports it in runtime-containers-meta.
type daemonView struct {
	s  *snapshot.Snapshot
	ns string
	// ds is the kruise-daemon DaemonSet, nil when the scan found none.
	ds *appsv1.DaemonSet
	// notRead says why the DaemonSet's pods are not in the snapshot; "" when the scan listed them.
	notRead string
}

// newDaemonView finds kruise-daemon in the kruise-manager's namespace.
func newDaemonView(s *snapshot.Snapshot, env *kruiseenv.Env) *daemonView {
	d := &daemonView{s: s, ns: s.Settings.KruiseNamespace}
	if env.Manager != nil {
		d.ns = env.Manager.Deployment.Namespace
	}
	for _, ds := range s.DaemonSets {
		if ds.Namespace == d.ns && ds.Name == kruiseDaemon {
			d.ds = ds
		}
	}
	switch sc := s.Scope; {
	case d.ds == nil:
	case !sc.AllNamespaces && sc.Namespace != "" && sc.Namespace != d.ns:
		d.notRead = fmt.Sprintf("its pods were not read: the scan covers namespace %s only", sc.Namespace)
	case sc.LabelSelector != "" && !snapshot.SelectorImplies(d.ds.Spec.Selector, sc.LabelSelector):
		d.notRead = fmt.Sprintf("its pods were not read: the scan's label selector %q need not select them", sc.LabelSelector)
	}
	return d
}

// pods are the DaemonSet's pods the scan listed.
func (d *daemonView) pods() []types.UID {
	if d.ds == nil || d.notRead != "" {
		return nil
	}
	var out []types.UID
	for _, p := range d.s.PodsOwnedBy(d.ds.UID) {
		if p.Namespace == d.ns {
			out = append(out, p.UID)
		}
	}
	return out
}

// line says what the scan knows of kruise-daemon for a pod on the node: the DaemonSet's counts,
// and whether one of its pods is on that node, running and Ready, or what was read instead.
func (d *daemonView) line(node string) string {
	if d.ds == nil {
		return "DaemonSet kruise-daemon was not found"
	}
	line := fmt.Sprintf("DaemonSet %s/%s: %d of %d pods available", d.ns, d.ds.Name, d.ds.Status.NumberAvailable, d.ds.Status.DesiredNumberScheduled)
	if d.notRead != "" {
		return line + "; " + d.notRead
	}
	uids := d.pods()
	var here *corev1.Pod
	read := 0
	for _, uid := range uids {
		p, full := d.s.FullPod(uid)
		if !full {
			continue
		}
		read++
		// A pod replacing a Terminating one on the node is the one that would act.
		if p.Spec.NodeName == node && (here == nil || running(p)) {
			here = p
		}
	}
	switch {
	case here != nil && running(here):
		return line + fmt.Sprintf("; kruise-daemon pod %s on node %s is Running and Ready, yet has not reported the restart: read its log", here.Name, node)
	case here != nil:
		state := string(here.Status.Phase)
		if here.DeletionTimestamp != nil {
			state += ", Terminating"
		}
		return line + fmt.Sprintf("; kruise-daemon pod %s on node %s is %s, not Ready", here.Name, node, state)
	case len(uids) == 0:
		return line + fmt.Sprintf("; no kruise-daemon pod is on node %s: the DaemonSet has no pods", node)
	case read == len(uids):
		return line + fmt.Sprintf("; no kruise-daemon pod is on node %s (%d of its pods read, none there)", node, read)
	}
	return line + fmt.Sprintf("; %d of its %d pods were read in full, none of them on node %s", read, len(uids), node)
}

// running reports whether a kruise-daemon pod is up to act: Running, Ready, not being deleted.
func running(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && conditionTrue(p, corev1.PodReady)
}

// awaitsDaemon reports whether the pod's in-place update waits for kruise-daemon: env from
// metadata, and no runtime-containers-meta yet.
func awaitsDaemon(p *corev1.Pod) bool {
	state, inPlace := readInPlaceState(p)
	return inPlace && state.UpdateEnvFromMetadata && p.Annotations[annotationRuntimeMeta] == ""
}
