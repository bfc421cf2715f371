package checktest

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Node is a node with UID "uid-node-<name>" and its hostname label.
func Node(name string, opts ...Option) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-node-" + name),
		Labels: map[string]string{"kubernetes.io/hostname": name}}}
	apply(n, opts)
	return n
}

func node(m metav1.Object) *corev1.Node { return m.(*corev1.Node) }

// Ready sets the Ready condition since sinceAgo as the kubelet reports it (True), or as the node
// lifecycle controller leaves it when the kubelet reports trouble (False) or heartbeats stop
// (Unknown, with the unreachable taints).
func Ready(status corev1.ConditionStatus, sinceAgo time.Duration) Option {
	return func(m metav1.Object) {
		n := node(m)
		c := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(Ago(sinceAgo))}
		switch status {
		case corev1.ConditionTrue:
			c.Reason, c.Message, c.LastHeartbeatTime = "KubeletReady", "kubelet is posting ready status", metav1.NewTime(Ago(3*time.Minute))
		case corev1.ConditionFalse:
			c.Reason, c.Message, c.LastHeartbeatTime = "KubeletNotReady", "container runtime network not ready: NetworkReady=false", metav1.NewTime(Ago(time.Minute))
			n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
		default:
			c.Reason, c.Message, c.LastHeartbeatTime = "NodeStatusUnknown", "Kubelet stopped posting node status.", metav1.NewTime(Ago(sinceAgo+40*time.Second))
			n.Spec.Taints = []corev1.Taint{
				{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: MetaAgo(sinceAgo)},
				{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: MetaAgo(sinceAgo)},
			}
		}
		n.Status.Conditions = []corev1.NodeCondition{c}
	}
}

// Taint adds a taint.
func Taint(t corev1.Taint) Option {
	return func(m metav1.Object) { node(m).Spec.Taints = append(node(m).Spec.Taints, t) }
}

// Kwok marks the node the way kwok's shipped manifests create simulated nodes.
func Kwok() Option {
	return func(m metav1.Object) {
		Annotations(map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"})(m)
		Labels(map[string]string{"type": "kwok"})(m)
		Taint(corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule})(m)
	}
}

// Lease is a coordination Lease held by holder, renewed renewedAgo.
func Lease(namespace, name, holder string, durationSeconds int32, renewedAgo time.Duration) *coordinationv1.Lease {
	renew := metav1.NewMicroTime(Ago(renewedAgo))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &durationSeconds, RenewTime: &renew},
	}
}

// NodeLease is the kubelet's heartbeat Lease in kube-node-lease.
func NodeLease(node string, renewedAgo time.Duration) *coordinationv1.Lease {
	return Lease(corev1.NamespaceNodeLease, node, node, 40, renewedAgo)
}
