package e2e

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const (
	// admNamespace holds the webhooks' Services; admGuarded is the namespace the missing
	// Service's webhook guards (selected by admLabel).
	admNamespace = "hooks"
	admGuarded   = "guarded"
	admLabel     = "workloaddoctor.io/e2e-webhook"
)

// admissionCheck is a test check that reads only the admission input and the objects being
// deleted (which take the deleted webhook configurations from it).
type admissionCheck struct{}

func (admissionCheck) Info() checks.Info {
	return checks.Info{ID: "admission", Threshold: time.Minute,
		Needs: []checks.Need{{Input: snapshot.InputAdmission, Optional: true}, {Input: snapshot.InputObjects}}}
}
func (admissionCheck) Run(*snapshot.Snapshot, time.Duration) []report.Finding { return nil }

// TestAdmissionReadAndJudged builds webhooks on the real control plane: one calling a Service
// that does not exist (with failurePolicy Fail, guarding ConfigMaps in one namespace), one a
// Service whose only endpoint is not ready, one (mutating, Ignore) a Service with a ready
// endpoint in an EndpointSlice the test writes, one a URL; and a ValidatingAdmissionPolicy with
// its binding. It shows:
//   - the apiserver rejects a write the first webhook matches, quoting `failed calling webhook`,
//     and lets one it does not match pass, as admission.Matches predicts;
//   - the collector reads the configurations and, for each Service a webhook calls, one GET and
//     (when it exists) one LIST of its EndpointSlices by label in its namespace, nothing more;
//     admission.WebhookBackend judges each backend from that read;
//   - the built binary's scan names the input in coverage only when it could not read it
//     (forbidden: degraded, exit code unchanged), and costs exactly those reads more.
func TestAdmissionReadAndJudged(t *testing.T) {
	pluginBinary(t)
	c := testcluster.Start(t, testcluster.Options{})
	ctx := t.Context()
	cs := c.Clientset()
	createNamespace(t, c, admNamespace)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: admGuarded,
		Labels: map[string]string{admLabel: "on"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	notReady := admService(t, cs, "not-ready", false)
	ready := admService(t, cs, "ready", true)

	proxy := c.StartFaultProxy(t, admNamespace)
	counted := admCountingRules()
	proxy.Set(counted.rules()...)
	// Before any webhook: the cost of a scan without webhook Services to read.
	before := pluginOn(proxy.Kubeconfig).scan(t, "-A", "-o", "json").wantExit(0)
	base := counted.snapshot(proxy)

	guarded := checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{admLabel: "on"}})
	nowhere := checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{admLabel: "nowhere"}})
	configMaps := checktest.Rules("CREATE,UPDATE", "", "v1", "configmaps")
	vwc := checktest.ValidatingWebhooks("e2e-policy",
		checktest.Webhook("gone.e2e.example.com", admNamespace, "gone", configMaps, guarded),
		checktest.Webhook("not-ready.e2e.example.com", admNamespace, notReady.Name, configMaps, nowhere),
		checktest.Webhook("url.e2e.example.com", "", "", configMaps, nowhere, checktest.WebhookURL("https://127.0.0.1:9/validate")))
	mwc := checktest.MutatingWebhooks("e2e-defaults",
		checktest.Webhook("ready.e2e.example.com", admNamespace, ready.Name, configMaps, nowhere,
			checktest.FailurePolicy(admissionregistrationv1.Ignore)))
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admPolicy(t, cs)

	// The apiserver's own verdict on two writes, against Matches on the same objects as stored.
	gone := admWebhook(t, cs, "gone.e2e.example.com")
	var rejection string
	eventually(t, 30*time.Second, "the apiserver to call the new webhook", func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: admGuarded, GenerateName: "probe-"}}
		created, err := cs.CoreV1().ConfigMaps(admGuarded).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil { // the apiserver's informer has not seen the webhook yet
			return false, cs.CoreV1().ConfigMaps(admGuarded).Delete(ctx, created.Name, metav1.DeleteOptions{})
		}
		rejection = err.Error()
		return true, nil
	})
	if !strings.Contains(rejection, `failed calling webhook "gone.e2e.example.com"`) || !strings.Contains(rejection, `service "gone" not found`) {
		t.Fatalf("a ConfigMap created in %s: %s; want the missing Service's webhook failing", admGuarded, rejection)
	}
	if _, err := cs.CoreV1().ConfigMaps(admNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "passes"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a ConfigMap in a namespace the webhook does not select was refused: %v", err)
	}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for ns, want := range map[string]admission.Verdict{admGuarded: admission.Matched, admNamespace: admission.NoMatch} {
		nsObj, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := admission.Matches(gone, admission.Create(cmGVR, &metav1.ObjectMeta{Namespace: ns, Name: "x"}, nsObj.Labels))
		if m.Verdict != want {
			t.Errorf("Matches on a ConfigMap created in %s = %+v, want %s as the apiserver did", ns, m, want)
		}
	}

	// The collector's read, request by request.
	log, clients := loggedClients(t, c)
	_, snap, err := scan.Run(ctx, clients, scan.Options{Scope: snapshot.Scope{AllNamespaces: true},
		Settings: snapshot.DefaultSettings(), Checks: []checks.Check{admissionCheck{}}, MinAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Unread) != 0 {
		t.Fatalf("unread: %v", snap.Unread)
	}
	a := snap.Admission
	if len(a.ValidatingWebhooks) != 1 || len(a.MutatingWebhooks) != 1 || !a.PoliciesServed || len(a.Policies) != 1 || len(a.PolicyBindings) != 1 {
		t.Errorf("admission read: %d validating, %d mutating, policies served %v: %d, %d bindings; want 1, 1, true: 1, 1",
			len(a.ValidatingWebhooks), len(a.MutatingWebhooks), a.PoliciesServed, len(a.Policies), len(a.PolicyBindings))
	}
	for _, name := range []string{"gone", notReady.Name, ready.Name} {
		path := "/api/v1/namespaces/" + admNamespace + "/services/" + name
		if got := log.matching(http.MethodGet, path); len(got) != 1 {
			t.Errorf("Service %s read %d times, want one GET: %v", name, len(got), got)
		}
		slicesRead := log.matching(http.MethodGet, "/apis/discovery.k8s.io/v1/namespaces/"+admNamespace+"/endpointslices",
			"labelSelector=kubernetes.io%2Fservice-name%3D"+name)
		if want := map[bool]int{true: 0, false: 1}[name == "gone"]; len(slicesRead) != want {
			t.Errorf("EndpointSlices of %s listed %d times, want %d: %v", name, len(slicesRead), want, slicesRead)
		}
	}
	if got := log.matching(http.MethodGet, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"); len(got) != 1 {
		t.Errorf("validating webhook configurations listed %d times (the objects input must take them from the admission input): %v", len(got), got)
	}
	want := map[string]admission.State{
		"gone.e2e.example.com": admission.Unavailable, "not-ready.e2e.example.com": admission.Unavailable,
		"ready.e2e.example.com": admission.Available, "url.e2e.example.com": admission.Unknown,
	}
	for _, w := range admission.Webhooks(a.ValidatingWebhooks, a.MutatingWebhooks) {
		b := admission.WebhookBackend(w, snap, nil)
		if b.State != want[w.Name] {
			t.Errorf("%s: %s (%s), want %s\n  %s", w, b.State, b.Reason, want[w.Name], strings.Join(b.Evidence, "\n  "))
		}
	}
	// The apiserver's own message, as the checks will quote it from events and conditions.
	if b := admission.WebhookBackend(gone, snap, []string{rejection}); b.State != admission.Unavailable ||
		!slices.ContainsFunc(b.Evidence, func(e string) bool { return strings.Contains(e, `service "gone" not found`) }) {
		t.Errorf("the missing Service's webhook with the apiserver's rejection quoted: %+v", b)
	}

	// The binary: the webhooks cost one GET per Service and one LIST per existing Service more.
	after := pluginOn(proxy.Kubeconfig).scan(t, "-A", "-o", "json").wantExit(0)
	for _, run := range []*pluginRun{before, after} {
		r := run.report()
		if !r.Coverage.Complete || !slices.Contains(r.Coverage.Checks, "stuck-terminating") || !slices.Contains(r.Coverage.Checks, "rollout-stalled") {
			t.Errorf("coverage = %+v, want complete with stuck-terminating and rollout-stalled", r.Coverage)
		}
	}
	// base is what the scan before cost; the scan after cost the rest.
	if grown := counted.snapshot(proxy).minus(base).minus(base); grown != (admCounts{serviceGets: 3, sliceLists: 2}) {
		t.Errorf("requests the webhooks added to a scan: %+v; want 3 Service GETs, 2 EndpointSlice LISTs, nothing else", grown)
	}

	// Forbidden: the validating configurations' list and the ready Service's GET. Coverage
	// names the input for both checks that use it, as degraded; the scan still looked.
	forbid := []*testcluster.FaultRule{
		{Method: http.MethodGet, Path: regexp.MustCompile(`^/apis/admissionregistration\.k8s\.io/v1/validatingwebhookconfigurations$`), Fault: testcluster.Status, Code: http.StatusForbidden},
		{Method: http.MethodGet, Path: regexp.MustCompile(`^/api/v1/namespaces/` + admNamespace + `/services/` + ready.Name + `$`), Fault: testcluster.Status, Code: http.StatusForbidden},
	}
	proxy.Set(forbid...)
	denied := pluginOn(proxy.Kubeconfig).scan(t, "-A", "-o", "json").wantExit(0).report()
	if len(denied.Coverage.Unread) != 0 {
		t.Errorf("a forbidden read blinds the scan: %+v", denied.Coverage.Unread)
	}
	for _, check := range []string{"stuck-terminating", "rollout-stalled"} {
		i := slices.IndexFunc(denied.Coverage.Degraded, func(n report.Note) bool { return n.Check == check })
		if i < 0 || !slices.Contains(denied.Coverage.Degraded[i].Inputs, string(snapshot.InputAdmission)) ||
			!strings.Contains(denied.Coverage.Degraded[i].Reason, "forbidden: list admissionregistration.k8s.io/validatingwebhookconfigurations") ||
			!strings.Contains(denied.Coverage.Degraded[i].Reason, "forbidden: get services "+admNamespace+"/"+ready.Name) {
			t.Errorf("coverage of %s with the reads forbidden: %+v", check, denied.Coverage.Degraded)
		}
	}
}

// admService creates a ClusterIP Service without a selector, port "https" 443 -> 8443, and the
// EndpointSlice its owner writes (as a controller that is not the endpointslice controller
// does), with one endpoint, ready or not.
func admService(t *testing.T, cs kubernetes.Interface, name string, ready bool) *corev1.Service {
	t.Helper()
	ctx := t.Context()
	svc, err := cs.CoreV1().Services(admNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: admNamespace, Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.DiscoveryV1().EndpointSlices(admNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: admNamespace, Name: name + "-1", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "e2e.workloaddoctor.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](8443), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.10"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(false)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// admPolicy creates a ValidatingAdmissionPolicy and its binding that select nothing.
func admPolicy(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	rules := []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: checktest.Rules("CREATE", "", "v1", "configmaps")[0]}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: rules},
			Validations:      []admissionregistrationv1.Validation{{Expression: "true"}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-policy"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "e2e-policy",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{admLabel: "nowhere"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// admWebhook is a webhook of the cluster's configurations as the apiserver stored it.
func admWebhook(t *testing.T, cs kubernetes.Interface, name string) admission.Webhook {
	t.Helper()
	vwcs, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []*admissionregistrationv1.ValidatingWebhookConfiguration
	for i := range vwcs.Items {
		cfgs = append(cfgs, &vwcs.Items[i])
	}
	for _, w := range admission.Webhooks(cfgs, nil) {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("webhook %s not stored", name)
	return admission.Webhook{}
}

// admCounts counts requests through the fault proxy: GETs of one Service, LISTs of one
// namespace's EndpointSlices, and every other request.
type admCounts struct{ serviceGets, sliceLists, other int }

type admCounter struct{ svc, slices, other *testcluster.FaultRule }

// admCountingRules forward every request, counting it.
func admCountingRules() admCounter {
	return admCounter{
		svc:    &testcluster.FaultRule{Method: http.MethodGet, Path: regexp.MustCompile(`^/api/v1/namespaces/[^/]+/services/[^/]+$`), Fault: testcluster.Before},
		slices: &testcluster.FaultRule{Method: http.MethodGet, Path: regexp.MustCompile(`^/apis/discovery\.k8s\.io/v1/namespaces/[^/]+/endpointslices$`), Fault: testcluster.Before},
		other:  &testcluster.FaultRule{Path: regexp.MustCompile(`.`), Fault: testcluster.Before},
	}
}

func (c admCounter) rules() []*testcluster.FaultRule {
	return []*testcluster.FaultRule{c.svc, c.slices, c.other}
}

func (c admCounter) snapshot(p *testcluster.FaultProxy) admCounts {
	return admCounts{serviceGets: p.Hits(c.svc), sliceLists: p.Hits(c.slices), other: p.Hits(c.other)}
}

func (a admCounts) minus(b admCounts) admCounts {
	return admCounts{a.serviceGets - b.serviceGets, a.sliceLists - b.sliceLists, a.other - b.other}
}

// TestAdmissionPoliciesNotServed: an apiserver that does not serve ValidatingAdmissionPolicies
// (as before v1.30; here turned off with --runtime-config, and the admission plugin that waits on
// them with it) is recorded as not serving them, and
// the webhooks are read all the same: not an error.
func TestAdmissionPoliciesNotServed(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{ExtraAPIServerArgs: []string{
		"--runtime-config=admissionregistration.k8s.io/v1/validatingadmissionpolicies=false,admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false",
		"--disable-admission-plugins=ServiceAccount,ValidatingAdmissionPolicy"}})
	ctx := t.Context()
	if _, err := c.Clientset().AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("listing policies on an apiserver that should not serve them: %v", err)
	}
	if _, err := c.Clientset().AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, checktest.ValidatingWebhooks("e2e-policy",
		checktest.Webhook("gone.e2e.example.com", "default", "gone", checktest.Rules("CREATE", "", "v1", "configmaps"),
			checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{admLabel: "nowhere"}}))), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	log, clients := loggedClients(t, c)
	_, snap, err := scan.Run(ctx, clients, scan.Options{Scope: snapshot.Scope{AllNamespaces: true},
		Settings: snapshot.DefaultSettings(), Checks: []checks.Check{admissionCheck{}}, MinAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Unread) != 0 || snap.Admission.PoliciesServed || len(snap.Admission.ValidatingWebhooks) != 1 {
		t.Errorf("unread %v, policies served %v, %d validating configurations; want nothing unread, not served, 1",
			snap.Unread, snap.Admission.PoliciesServed, len(snap.Admission.ValidatingWebhooks))
	}
	if b := snap.BackendService("default", "gone"); b == nil || b.Service != nil {
		t.Errorf("the webhook's missing Service: %+v, want read as missing", b)
	}
	// Discovery said so: the policies were not even asked for.
	if got := log.matching(http.MethodGet, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"); len(got) != 0 {
		t.Errorf("policies listed although discovery does not serve them: %v", got)
	}
}
