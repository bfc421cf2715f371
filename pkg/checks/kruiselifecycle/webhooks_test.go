package kruiselifecycle

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// kruiseWebhooks are OpenKruise's pod webhooks as v1.8 installs them (config/webhook/manifests.yaml
// and patch_manifests.yaml, the kruise- name prefix and kruise-system namespace of
// config/default): mpod.kb.io on pod creates, vpod.kb.io on pod updates and deletes, both
// failurePolicy Fail and skipping namespaces labelled control-plane, calling
// kruise-system/kruise-webhook-service, which kruise-manager's pods serve.
func kruiseWebhooks() kruiseHooks {
	skip := checktest.NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "control-plane", Operator: metav1.LabelSelectorOpDoesNotExist}}})
	return kruiseHooks{
		mutating: checktest.MutatingWebhooks("kruise-mutating-webhook-configuration",
			checktest.Webhook("mpod.kb.io", "kruise-system", "kruise-webhook-service", checktest.Rules("CREATE", "", "v1", "pods"), skip)),
		validating: checktest.ValidatingWebhooks("kruise-validating-webhook-configuration",
			checktest.Webhook("vpod.kb.io", "kruise-system", "kruise-webhook-service", checktest.Rules("UPDATE,DELETE", "", "v1", "pods"), skip)),
	}
}

type kruiseHooks struct {
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
}

// in adds the webhooks, their Service with ready endpoints (-1: the Service is gone) and the
// namespace shop with labels to the cluster.
func (a kruiseHooks) in(c checktest.Cluster, ready int, nsLabels map[string]string) *snapshot.Snapshot {
	svc := checktest.WebhookServiceObject("kruise-system", "kruise-webhook-service")
	backend := checktest.Backend("kruise-system", "kruise-webhook-service", svc, checktest.EndpointSlice(svc, "https", ready, 0, 0))
	if ready < 0 {
		backend = checktest.Backend("kruise-system", "kruise-webhook-service", nil)
	}
	ns := checktest.Namespace("shop")
	for k, v := range nsLabels {
		ns.Labels[k] = v
	}
	c.Namespaces = []*corev1.Namespace{ns}
	c.Admission = snapshot.Admission{MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{a.mutating},
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{a.validating},
		Services:           map[string]*snapshot.BackendService{"kruise-system/kruise-webhook-service": backend}}
	return c.Snapshot()
}

var controlPlaneNS = map[string]string{"control-plane": "true"}

// webhookCase is a root cause and what its finding must say; blocked says whether blockedBy names
// the webhook's configuration and Service.
type webhookCase struct {
	name      string
	s         func() *snapshot.Snapshot
	rootCause string
	evidence  []string
	blocked   string
	fixes     []string
}

func runWebhookCases(t *testing.T, run func(*snapshot.Snapshot) []report.Finding, cases []webhookCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := run(tc.s())
			expect(t, got, tc.rootCause, tc.evidence, tc.fixes)
			var want []report.BlockRef
			if tc.blocked != "" {
				want = []report.BlockRef{{APIVersion: "admissionregistration.k8s.io/v1", Kind: tc.blocked, Name: map[string]string{
					"MutatingWebhookConfiguration": "kruise-mutating-webhook-configuration", "ValidatingWebhookConfiguration": "kruise-validating-webhook-configuration"}[tc.blocked]},
					{APIVersion: "v1", Kind: "Service", Namespace: "kruise-system", Name: "kruise-webhook-service"}}
			}
			if b := got[0].BlockedBy; len(b) != len(want) || len(want) > 0 && (b[0] != want[0] || b[1] != want[1]) {
				t.Errorf("blockedBy %+v, want %+v", b, want)
			}
			if all := strings.Join(got[0].RootCause.Evidence, "\n"); tc.blocked == "" && tc.evidence == nil && strings.Contains(all, ".kb.io") {
				t.Errorf("a webhook is named:\n%s", all)
			}
		})
	}
}

// A CloneSet whose pod creates the apiserver rejects because OpenKruise's own mpod.kb.io cannot
// be called (its Service gone) while the leader runs: the webhook is the root cause. With no
// leader, controller-unavailable stays the root and the evidence names the webhook the same
// manager serves. In a namespace labelled control-plane the webhook is not called and not named.
func TestExpectationsWebhookBlocksCreates(t *testing.T) {
	const notFound = `failed to create pod: Internal error occurred: failed calling webhook "mpod.kb.io": failed to call webhook: Post "https://kruise-webhook-service.kruise-system.svc:443/mutate-pod?timeout=30s": service "kruise-webhook-service" not found, pod: {"metadata":{"name":"demo-5l6cv"}}`
	const denied = `failed to create pod: admission webhook "mpod.kb.io" denied the request: pod has no owner workload, pod: {"metadata":{"name":"demo-5l6cv"}}`
	cs := cloneSetCase{name: "demo", replicas: 3, generation: 2, status: checktest.CloneSetStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
		specAge: 20 * time.Minute, statusAge: 20 * time.Minute}
	cluster := func(env controlPlane, msg string) checktest.Cluster {
		w := cs.cloneSet(t)
		evs := []*corev1.Event{workloadEvent(w, corev1.EventTypeWarning, "FailedCreate", msg, 2*time.Minute)}
		return clusterOf(env, []*kruise.Workload{w}, normalPods(w, 1, "5d4f8b7c9", time.Hour), evs)
	}
	live := controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logs: text("")}
	down := controlPlane{mgr: checktest.KruiseManager("v1.7.0", 0), lease: checktest.KruiseLeaderLease(20 * time.Minute)}
	leaked := leakedCloneSet()
	runWebhookCases(t, func(s *snapshot.Snapshot) []report.Finding {
		return ExpectationsUnsatisfied().Run(s, expectationsThreshold)
	}, []webhookCase{
		{"leader up, service gone", func() *snapshot.Snapshot { return kruiseWebhooks().in(cluster(live, notFound), -1, nil) }, RootCauseAdmissionWebhookUnavailable,
			[]string{"MutatingWebhookConfiguration kruise-mutating-webhook-configuration, webhook mpod.kb.io is called for the creates of its pods: rule CREATE core/v1 pods",
				"its backend is unavailable: Service kruise-system/kruise-webhook-service does not exist", "delete MutatingWebhookConfiguration kruise-mutating-webhook-configuration"},
			"MutatingWebhookConfiguration", nil},
		{"leader up, webhook denied", func() *snapshot.Snapshot { return kruiseWebhooks().in(cluster(live, denied), 2, nil) }, RootCausePodCreationFailing,
			[]string{"denied the request"}, "", nil},
		{"manager down", func() *snapshot.Snapshot {
			w := leaked.cloneSet(t)
			return kruiseWebhooks().in(clusterOf(down, []*kruise.Workload{w}, normalPods(w, 1, "5d4f8b7c9", time.Hour), nil), 0, nil)
		}, RootCauseControllerUnavailable, []string{"the create of its pods is rejected too, while MutatingWebhookConfiguration kruise-mutating-webhook-configuration, webhook mpod.kb.io cannot be called",
			"Service kruise-system/kruise-webhook-service port 443 (https): 0/0 endpoints ready"}, "", nil},
		{"manager down, control-plane namespace", func() *snapshot.Snapshot {
			w := leaked.cloneSet(t)
			return kruiseWebhooks().in(clusterOf(down, []*kruise.Workload{w}, normalPods(w, 1, "5d4f8b7c9", time.Hour), nil), 0, controlPlaneNS)
		}, RootCauseControllerUnavailable, nil, "", nil},
	})
}

// A pod in PreparingNormal whose hook is satisfied, while vpod.kb.io (pod updates) cannot be
// called: the update that moves it is rejected, whoever makes it, so the webhook is the root
// cause. With no leader, controller-unavailable names the webhook too; in a namespace labelled
// control-plane the webhook is not called, and the pod gets its usual verdict.
func TestPreparingNormalWebhookBlocksUpdate(t *testing.T) {
	cluster := func(env controlPlane) checktest.Cluster {
		w := steady("web", hookBoth).cloneSet(t)
		p := cloneSetPod(w, "web-a", kruise.StatePreparingNormal, 20*time.Minute, "5d4f8b7c9")
		hook(p, "registry-controller", 19*time.Minute, []string{hookFinalizer}, map[string]string{hookLabel: "true"})
		return clusterOf(env, []*kruise.Workload{w}, []*corev1.Pod{p}, nil)
	}
	down := controlPlane{mgr: checktest.KruiseManager("v1.7.0", 0)}
	usual := StuckPreparingNormal().Run(cluster(healthy("v1.7.0")).Snapshot(), preparingNormalThreshold)
	if len(usual) != 1 {
		t.Fatalf("without webhooks: %d findings", len(usual))
	}
	runWebhookCases(t, func(s *snapshot.Snapshot) []report.Finding {
		return StuckPreparingNormal().Run(s, preparingNormalThreshold)
	}, []webhookCase{
		{"leader up, service gone", func() *snapshot.Snapshot { return kruiseWebhooks().in(cluster(healthy("v1.7.0")), -1, nil) }, RootCauseAdmissionWebhookUnavailable,
			[]string{"ValidatingWebhookConfiguration kruise-validating-webhook-configuration, webhook vpod.kb.io is called for the update that moves the pod out of PreparingNormal: rule UPDATE,DELETE core/v1 pods",
				"Service kruise-system/kruise-webhook-service: not found"}, "ValidatingWebhookConfiguration", nil},
		{"manager down", func() *snapshot.Snapshot { return kruiseWebhooks().in(cluster(down), 0, nil) }, RootCauseControllerUnavailable,
			[]string{"the update that moves the pod out of PreparingNormal is rejected too, while ValidatingWebhookConfiguration kruise-validating-webhook-configuration, webhook vpod.kb.io cannot be called"}, "", nil},
		{"control-plane namespace", func() *snapshot.Snapshot { return kruiseWebhooks().in(cluster(healthy("v1.7.0")), -1, controlPlaneNS) }, usual[0].RootCause.ID, nil, "", fixes(usual[0])},
		{"backend up", func() *snapshot.Snapshot { return kruiseWebhooks().in(cluster(healthy("v1.7.0")), 2, nil) }, usual[0].RootCause.ID, nil, "", fixes(usual[0])},
	})
}

func fixes(f report.Finding) []string {
	var out []string
	for _, fx := range f.Fixes {
		out = append(out, fx.Action)
	}
	return out
}
