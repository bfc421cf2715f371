package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

const (
	// rwHooks holds the webhooks' Services: rwIdle selects no pod, rwGone does not exist.
	rwHooks, rwIdle, rwGone = "rw-hooks", "rw-idle", "rw-gone"
	rwPool                  = "rw-apps"
)

// rwCase is one namespace: a Deployment of one replica rolled with maxUnavailable 0 (the old pod
// keeps serving, the surge pod is the only create), the webhooks in a ValidatingWebhookConfiguration
// named after the namespace, and what the scan says.
type rwCase struct {
	ns    string
	hooks []admissionregistrationv1.ValidatingWebhook
	// rootCause is the finding on the Deployment; "" when the rollout completes and nothing is
	// reported.
	rootCause string
	evidence  []string
	blockedBy []report.BlockRef
	// refusal is what the Deployment's ReplicaFailure quotes once the rollout is refused.
	refusal string
}

// TestRolloutWebhookRefusesPods (issue 27) rolls Deployments on the real kube-controller-manager
// while webhooks with failurePolicy Fail on pod creates cannot be called: one calling a Service
// that does not exist, one a Service without endpoints, one a server the test runs on loopback,
// first up (it allows, the rollout completes, nothing is reported) and then stopped. The
// ReplicaSet controller's creates are refused (manageReplicas, pkg/controller/replicaset/
// replica_set.go, kubernetes v1.37.1) and the Deployment copies ReplicaFailure (getReplicaFailures,
// pkg/controller/deployment/sync.go); the scan names the webhook, its configuration, its
// failurePolicy and its backend's state. Neighbours on the same cluster: a webhook with
// failurePolicy Ignore whose Service is gone, and fail-closed ones whose namespaceSelector or
// objectSelector leaves the pods out: the rollouts complete and nothing is named. A loopback
// webhook that answers and denies is the template breaking a policy: pod-creation-refused.
// The apiserver calls a Service's ClusterIP (ResolveCluster, k8s.io/apiserver pkg/util/proxy), so
// what a call to the Service without endpoints meets depends on the machine's network; the scan
// judges that backend by the Service's EndpointSlices, which the test asserts.
func TestRolloutWebhookRefusesPods(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	c, _ := scenarioCluster(t)
	e := &coreEnv{cs: c.Clientset()}
	e.node(t, rwPool+"-0", rwPool, "16")
	createNamespace(t, c, rwHooks)
	idle := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: rwHooks, Name: rwIdle}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": rwIdle}, Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}}}}
	if _, err := e.cs.CoreV1().Services(rwHooks).Create(t.Context(), idle, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server, denier := startAdmissionServer(t, ""), startAdmissionServer(t, "image registry.example.com/shop/web:1.1 is not signed")

	policy := func(ns string) report.BlockRef {
		return report.BlockRef{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration", Name: ns}
	}
	service := func(name string) report.BlockRef {
		return report.BlockRef{APIVersion: "v1", Kind: "Service", Namespace: rwHooks, Name: name}
	}
	// The neighbours' configurations are created first: once the apiserver calls the later ones,
	// its informer has seen these too.
	cases := []*rwCase{
		{ns: "rw-ignore", hooks: []admissionregistrationv1.ValidatingWebhook{
			rwHook("validate", "rw-ignore", rwGone, checktest.FailurePolicy(admissionregistrationv1.Ignore))}},
		{ns: "rw-unselected", hooks: []admissionregistrationv1.ValidatingWebhook{
			rwHook("namespaces", "rw-unselected", rwGone, checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"policy": "enforced"}})),
			rwHook("objects", "rw-unselected", rwGone, checktest.ObjectSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"policy": "enforced"}}))}},
		{ns: "rw-missing", hooks: []admissionregistrationv1.ValidatingWebhook{rwHook("validate", "rw-missing", rwGone)},
			rootCause: "admission-webhook-unavailable", refusal: `service "rw-gone" not found`, blockedBy: []report.BlockRef{policy("rw-missing"), service(rwGone)},
			evidence: []string{"ValidatingWebhookConfiguration rw-missing, webhook validate.rw-missing.e2e.example.com is called for the creates of its pods: rule CREATE core/v1 pods",
				"failurePolicy Fail, calls Service rw-hooks/rw-gone port 443", "Service rw-hooks/rw-gone: not found",
				"its backend is unavailable: Service rw-hooks/rw-gone does not exist", `service "rw-gone" not found`}},
		{ns: "rw-no-endpoints", hooks: []admissionregistrationv1.ValidatingWebhook{rwHook("validate", "rw-no-endpoints", rwIdle)},
			rootCause: "admission-webhook-unavailable", refusal: "failed calling webhook", blockedBy: []report.BlockRef{policy("rw-no-endpoints"), service(rwIdle)},
			evidence: []string{"webhook validate.rw-no-endpoints.e2e.example.com is called for the creates of its pods",
				"Service rw-hooks/rw-idle port 443 (https): 0/0 endpoints ready", "its backend is unavailable: Service rw-hooks/rw-idle has no ready endpoint"}},
		{ns: "rw-server", hooks: []admissionregistrationv1.ValidatingWebhook{rwHook("validate", "rw-server", "", server.clientConfig)}},
		{ns: "rw-denied", hooks: []admissionregistrationv1.ValidatingWebhook{rwHook("validate", "rw-denied", "", denier.clientConfig)},
			rootCause: "pod-creation-refused", refusal: "denied the request", evidence: []string{
				"refused by AdmissionWebhook validate.rw-denied.e2e.example.com: denied the request: image registry.example.com/shop/web:1.1 is not signed",
				"ValidatingWebhookConfiguration rw-denied, webhook validate.rw-denied.e2e.example.com is called for the creates of its pods",
				"failurePolicy Fail, calls URL https://" + denier.addr, "its backend is available: it answered the apiserver and denied the request",
				"make the template meet its policy"}},
	}
	t.Run("deployments", func(t *testing.T) {
		for _, rc := range cases {
			t.Run(rc.ns, func(t *testing.T) {
				t.Parallel()
				createNamespace(t, c, rc.ns)
				e.createDeployment(t, rc.ns, rwDeployment())
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	for _, rc := range cases {
		cfg := checktest.ValidatingWebhooks(rc.ns, rc.hooks...)
		cfg.UID = ""
		if _, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), cfg, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
			t.Fatal(err)
		}
	}
	// A dry-run create goes through admission: the apiserver calls the webhooks once it sees them.
	for _, rc := range cases[2:4] {
		e.probePodCreate(t, rc.ns, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), fmt.Sprintf("failed calling webhook %q", rc.hooks[0].Name))
		})
	}
	e.probePodCreate(t, "rw-server", func(err error) bool { return err == nil && server.calls.Load() > 0 })
	e.probePodCreate(t, "rw-denied", func(err error) bool { return err != nil && strings.Contains(err.Error(), "denied the request") })

	t.Run("rolled", func(t *testing.T) {
		for _, rc := range cases {
			t.Run(rc.ns, func(t *testing.T) {
				t.Parallel()
				e.rollPastWebhooks(t, rc.ns, coreImageNext, rc.refusal)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	rep := pluginOn(c.Kubeconfig).scan(t, "-A", "-o", "json", "--min-age", "0s").wantExit(2).agreed()
	for _, rc := range cases {
		t.Run(rc.ns, func(t *testing.T) { rc.assert(t, rep) })
	}

	// The webhook server stops: the next rollout's creates are refused with connection refused.
	server.stop()
	down := &rwCase{ns: "rw-server", rootCause: "admission-webhook-unavailable", blockedBy: []report.BlockRef{policy("rw-server")},
		evidence: []string{"webhook validate.rw-server.e2e.example.com is called for the creates of its pods",
			"failurePolicy Fail, calls URL https://" + server.addr, "connect: connection refused",
			"its backend is unavailable: calls fail: nothing listens behind it (connection refused)"}}
	e.rollPastWebhooks(t, down.ns, "registry.example.com/shop/web:1.2", "connect: connection refused")
	rep = pluginOn(c.Kubeconfig).scan(t, "-A", "-o", "json", "--min-age", "0s").wantExit(2).agreed()
	down.assert(t, rep)
}

// rwHook is webhook NAME.NS.e2e.example.com with failurePolicy Fail (unless opts say otherwise)
// on pod creates in namespace ns, calling Service rwHooks/svc with a short timeout.
func rwHook(name, ns, svc string, opts ...checktest.WebhookOption) admissionregistrationv1.ValidatingWebhook {
	opts = append([]checktest.WebhookOption{checktest.NamespaceSelector(&metav1.LabelSelector{
		MatchLabels: map[string]string{corev1.LabelMetadataName: ns}})}, opts...)
	h := checktest.Webhook(name+"."+ns+".e2e.example.com", rwHooks, svc, checktest.Rules("CREATE", "", "v1", "pods"), opts...)
	h.TimeoutSeconds = ptr.To[int32](2)
	return h
}

func rwDeployment() *appsv1.Deployment {
	d := coreDeployment("web", 1, coreTemplate("web", rwPool))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}}
	return d
}

// probePodCreate sends dry-run creates of the Deployment's pod to the apiserver until the result
// satisfies ok.
func (e *coreEnv) probePodCreate(t *testing.T, ns string, ok func(error) bool) {
	t.Helper()
	tmpl := coreTemplate("web", rwPool)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: tmpl.Labels}, Spec: tmpl.Spec}
	var last error
	eventually(t, 30*time.Second, "the apiserver to call the webhooks of "+ns, func(ctx context.Context) (bool, error) {
		_, last = e.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return ok(last), nil
	})
	t.Logf("%s: a pod create: %v", ns, last)
}

// rollPastWebhooks rolls web in ns to image and waits until the Deployment completes the rollout
// or, with a refusal, copies a ReplicaFailure quoting it.
func (e *coreEnv) rollPastWebhooks(t *testing.T, ns, image, refusal string) {
	t.Helper()
	e.patch(t, ns, "deployments", "web", coreRollTo(image, ""))
	if refusal == "" {
		e.waitDeployment(t, ns, "web", "the rollout past the webhooks to complete", coreDeploymentComplete)
		return
	}
	got := e.waitDeployment(t, ns, "web", "ReplicaFailure=True FailedCreate quoting "+refusal, func(d *appsv1.Deployment) bool {
		return coreDeploymentObserved(d) && coreCondition(d, appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate") &&
			strings.Contains(coreConditionOf(d, appsv1.DeploymentReplicaFailure).Message, refusal)
	})
	if got.Status.UpdatedReplicas != 0 || got.Status.AvailableReplicas != 1 {
		t.Fatalf("want the old pod serving and no new one: %s", coreDeploymentState(got))
	}
	t.Logf("%s", coreDeploymentState(got))
}

// assert checks the findings in the namespace: the Deployment's when the webhook refuses its
// pods, with the webhook's configuration (and Service) in blockedBy and no fix; none otherwise.
func (rc *rwCase) assert(t *testing.T, rep *report.Report) {
	t.Helper()
	var want []string
	if rc.rootCause != "" {
		want = []string{"rollout-stalled " + rc.rootCause + " Deployment/web"}
	}
	if got := coreFindings(rep, rc.ns); !slices.Equal(got, want) {
		t.Fatalf("findings in %s: %v, want %v; all:\n%s", rc.ns, got, want, summaries(rep))
	}
	if rc.rootCause == "" {
		return
	}
	f := coreFinding(t, rep, "rollout-stalled", "Deployment", rc.ns, "web")
	t.Logf("%s: %s\n  %s\n  %s", f.RootCause.ID, f.Summary, f.RootCause.Message, strings.Join(f.RootCause.Evidence, "\n  "))
	assertFinding(t, f, rc.rootCause, report.SeverityError, rc.evidence, nil)
	if !slices.Equal(f.BlockedBy, rc.blockedBy) {
		t.Errorf("blockedBy %+v, want %+v", f.BlockedBy, rc.blockedBy)
	}
	name := "webhook validate." + rc.ns + ".e2e.example.com rejects its new pods"
	if rc.rootCause == "pod-creation-refused" {
		name = "(AdmissionWebhook validate." + rc.ns + ".e2e.example.com)"
	}
	if !strings.Contains(f.Summary, name) {
		t.Errorf("summary %q does not say %q", f.Summary, name)
	}
}

// admissionServer is a validating webhook the test runs on loopback, with a certificate authority
// of its own that the webhook's caBundle trusts: it allows every request (or denies it, saying
// deny) and counts them.
type admissionServer struct {
	addr  string
	caPEM []byte
	deny  string
	calls atomic.Int32
	srv   *http.Server
}

func startAdmissionServer(t *testing.T, deny string) *admissionServer {
	t.Helper()
	caPEM, cert, err := testcluster.LoopbackTLS()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &admissionServer{addr: ln.Addr().String(), caPEM: caPEM, deny: deny}
	a.srv = &http.Server{Handler: http.HandlerFunc(a.review), ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = a.srv.ServeTLS(ln, "", "") }()
	t.Cleanup(a.stop)
	return a
}

// clientConfig points a webhook at the server.
func (a *admissionServer) clientConfig(h *admissionregistrationv1.ValidatingWebhook) {
	u := "https://" + a.addr + "/validate"
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: a.caPEM}
}

// review answers an AdmissionReview v1 for the request's UID: allowed, or denied with a.deny.
func (a *admissionServer) review(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	a.calls.Add(1)
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: a.deny == ""}
	if a.deny != "" {
		review.Response.Result = &metav1.Status{Message: a.deny, Code: http.StatusForbidden}
	}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// stop closes the listener and every connection: calls then meet connection refused.
func (a *admissionServer) stop() { _ = a.srv.Close() }
