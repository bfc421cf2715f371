package kruiseenv

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// managerPod is a kruise-manager replica as its ReplicaSet creates it (the Deployment's
// template labels), Ready or not.
func managerPod(name string, ready bool) *corev1.Pod {
	p := checktest.Pod("kruise-system", name)
	p.Labels = map[string]string{"app": "kruise-controller-manager"}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

// The pod webhook mpod.kb.io is failurePolicy Fail (kruise v1.9.0
// pkg/webhook/pod/mutating/webhooks.go, its kubebuilder marker; config/webhook/manifests.yaml)
// and every manager replica serves it, so restarting the only Ready replica rejects pod
// creations cluster-wide until the new one is Ready: the fix is high risk then, and says why.
func TestRestartFixRiskFollowsOtherReadyReplicas(t *testing.T) {
	leader := kruise.HolderPod(checktest.KruiseHolder)
	tests := []struct {
		name string
		pods []*corev1.Pod
		risk report.Risk
		frag string
	}{
		{"single replica", []*corev1.Pod{managerPod(leader, true)}, report.RiskHigh,
			"has no other Ready replica, so until the new pod is Ready OpenKruise's pod webhook mpod.kb.io (failurePolicy Fail) rejects every pod creation"},
		{"second replica not Ready", []*corev1.Pod{managerPod(leader, true), managerPod("kruise-controller-manager-7d9f8b6c5-b7k2m", false)}, report.RiskHigh,
			"--action restart-controller-leader"},
		{"second Ready replica", []*corev1.Pod{managerPod(leader, true), managerPod("kruise-controller-manager-7d9f8b6c5-b7k2m", true)}, report.RiskMedium,
			"Ready replica kruise-controller-manager-7d9f8b6c5-b7k2m keeps serving the pod webhook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cluster(checktest.KruiseManager("v1.9.0", 1), checktest.KruiseLeaderLease(time.Second)).Snapshot()
			s.ControllerPods = tt.pods
			fx, ok := New(s).RestartFix()
			if !ok || fx.Risk != tt.risk || !strings.Contains(fx.Description, tt.frag) {
				t.Errorf("fix = %v %s %q, want risk %s with %q", ok, fx.Risk, fx.Description, tt.risk, tt.frag)
			}
		})
	}
}
