package admission

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
)

// The rules in these tests are cited from kubernetes v1.37.1,
// staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook (k8s.io/apiserver v0.37.1).

var (
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodes       = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	widgetsV1   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widgetsBeta = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}
	coreEvents  = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	eventsV1    = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	vwcs        = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	tokenReview = schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews"}
)

// shopLabels are the labels the apiserver keeps on namespace shop (it adds kubernetes.io/metadata.name).
var shopLabels = map[string]string{corev1.LabelMetadataName: "shop", "policy": "enforced"}

func webhook(rules []admissionregistrationv1.RuleWithOperations, opts ...checktest.WebhookOption) Webhook {
	c := checktest.ValidatingWebhooks("policy", checktest.Webhook("validate.example.com", "policy", "engine", rules, opts...))
	return Webhooks([]*admissionregistrationv1.ValidatingWebhookConfiguration{c}, nil)[0]
}

// in is a request on an object in namespace shop with labels app=web.
func in(gvr schema.GroupVersionResource, op admissionregistrationv1.OperationType) Request {
	l := map[string]string{"app": "web"}
	return Request{Resource: gvr, Operation: op, Namespace: "shop", Name: "web", NamespaceLabels: shopLabels, OldLabels: l, NewLabels: l}
}

func sub(r Request, subresource string) Request { r.Subresource = subresource; return r }

// cluster is a request on a cluster-scoped object.
func cluster(gvr schema.GroupVersionResource, op admissionregistrationv1.OperationType) Request {
	r := in(gvr, op)
	r.Namespace, r.NamespaceLabels = "", nil
	return r
}

type matchCase struct {
	name    string
	webhook Webhook
	req     Request
	want    Verdict
	why     string // a part of Match.Why, or of Match.Rule when the verdict is Matched
}

func runMatches(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := Matches(tc.webhook, tc.req)
			if m.Verdict != tc.want {
				t.Fatalf("Matches(%s) = %+v, want %s", tc.req, m, tc.want)
			}
			if tc.why != "" && !strings.Contains(m.Why+" "+m.Rule, tc.why) {
				t.Errorf("Matches(%s) = %+v, want %q in why/rule", tc.req, m, tc.why)
			}
		})
	}
}

// Each rule dimension, as rules.Matcher.Matches tests it (predicates/rules/rules.go: scope,
// operation, group, version, resource).
func TestMatchesRules(t *testing.T) {
	rules := checktest.Rules
	upd, del, create, connect := admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Create, admissionregistrationv1.Connect
	runMatches(t, []matchCase{
		// Matcher.operation: the operation named, or "*" for all, CONNECT included.
		{"operation named", webhook(rules("UPDATE", "apps", "v1", "deployments")), in(deployments, upd), Matched, "UPDATE apps/v1 deployments"},
		{"operation not named", webhook(rules("UPDATE", "apps", "v1", "deployments")), in(deployments, del), NoMatch, "no rule matches"},
		{"operation *", webhook(rules("*", "", "v1", "pods/exec")), sub(in(pods, connect), "exec"), Matched, ""},
		// Matcher.group and Matcher.version: exact or "*".
		{"core group is not apps", webhook(rules("UPDATE", "", "v1", "deployments")), in(deployments, upd), NoMatch, ""},
		{"group *", webhook(rules("UPDATE", "*", "*", "deployments")), in(deployments, upd), Matched, ""},
		{"other version, Exact", webhook(rules("UPDATE", "apps", "v1beta1", "deployments"), checktest.MatchPolicy(admissionregistrationv1.Exact)),
			in(deployments, upd), NoMatch, ""},
		// Matcher.resource: "pods" is not its subresources; "pods/status" only that one;
		// "pods/*" the pods and all of their subresources (sub "*" matches the empty one too);
		// "*" every resource but no subresource; "*/*" everything; "*/status" every status.
		{"resource without its subresource", webhook(rules("UPDATE", "", "v1", "pods")), sub(in(pods, upd), "status"), NoMatch, ""},
		{"subresource named", webhook(rules("UPDATE", "", "v1", "pods/status")), sub(in(pods, upd), "status"), Matched, ""},
		{"subresource named, not the object", webhook(rules("UPDATE", "", "v1", "pods/status")), in(pods, upd), NoMatch, ""},
		{"pods/* covers the pods", webhook(rules("UPDATE", "", "v1", "pods/*")), in(pods, upd), Matched, ""},
		{"pods/* covers pods/status", webhook(rules("UPDATE", "", "v1", "pods/*")), sub(in(pods, upd), "status"), Matched, ""},
		{"* is every resource", webhook(rules("UPDATE", "*", "*", "*")), in(deployments, upd), Matched, ""},
		{"* is no subresource", webhook(rules("UPDATE", "*", "*", "*")), sub(in(deployments, upd), "scale"), NoMatch, ""},
		{"*/* is everything", webhook(rules("UPDATE", "*", "*", "*/*")), sub(in(deployments, upd), "scale"), Matched, ""},
		{"*/status", webhook(rules("UPDATE", "*", "*", "*/status")), sub(in(deployments, upd), "status"), Matched, ""},
		{"one of several resources", webhook(rules("CREATE,UPDATE", "apps", "v1", "replicasets,deployments")), in(deployments, create), Matched, ""},
		// Matcher.scope: Namespaced is a request in a namespace but never a Namespace; Cluster a
		// cluster-scoped object or a Namespace.
		{"Namespaced on a namespaced object", webhook(rules("UPDATE", "*", "*", "*"), checktest.Scope(admissionregistrationv1.NamespacedScope)),
			in(deployments, upd), Matched, "(Namespaced)"},
		{"Namespaced on a node", webhook(rules("UPDATE", "*", "*", "*"), checktest.Scope(admissionregistrationv1.NamespacedScope)),
			cluster(nodes, upd), NoMatch, ""},
		{"Namespaced on a namespace", webhook(rules("UPDATE", "*", "*", "*"), checktest.Scope(admissionregistrationv1.NamespacedScope)),
			nsRequest(upd, shopLabels), NoMatch, ""},
		{"Cluster on a namespace", webhook(rules("UPDATE", "*", "*", "*"), checktest.Scope(admissionregistrationv1.ClusterScope)),
			nsRequest(upd, shopLabels), Matched, ""},
		{"Cluster on a node", webhook(rules("UPDATE", "*", "*", "*"), checktest.Scope(admissionregistrationv1.ClusterScope)),
			cluster(nodes, upd), Matched, ""},
		{"Cluster on a namespaced object", webhook(rules("UPDATE", "*", "*", "*"), checktest.Scope(admissionregistrationv1.ClusterScope)),
			in(deployments, upd), NoMatch, ""},
	})
}

// nsRequest is a request on Namespace shop itself (no namespace of its own; the apiserver gives
// the request the namespace's name).
func nsRequest(op admissionregistrationv1.OperationType, newLabels map[string]string) Request {
	return Request{Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Operation: op, Name: "shop",
		NamespaceLabels: shopLabels, OldLabels: shopLabels, NewLabels: newLabels}
}

// namespaceSelector and objectSelector, as ShouldCallHook applies them (generic/webhook.go) through
// Matcher.MatchNamespaceSelector (predicates/namespace/matcher.go) and
// Matcher.MatchObjectSelector (predicates/object/matcher.go).
func TestMatchesSelectors(t *testing.T) {
	all := checktest.Rules("*", "*", "*", "*/*")
	upd, del, create, connect := admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Create, admissionregistrationv1.Connect
	enforced := checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"policy": "enforced"}})
	notSystem := checktest.NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "shop"}}}})
	web := checktest.ObjectSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	unlabelled := checktest.ObjectSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}})
	unknownNS := in(deployments, upd)
	unknownNS.NamespaceLabels = nil
	relabelled := in(deployments, upd)
	relabelled.NewLabels = map[string]string{"app": "api"}
	otherApp := in(deployments, upd)
	otherApp.OldLabels, otherApp.NewLabels = map[string]string{"app": "api"}, map[string]string{"app": "api"}
	runMatches(t, []matchCase{
		{"namespace selected", webhook(all, enforced), in(deployments, upd), Matched, ""},
		{"namespace not selected", webhook(all, notSystem), in(deployments, upd), NoMatch, "namespaceSelector does not select namespace shop"},
		// A cluster-scoped object other than a Namespace is never exempted by a namespaceSelector.
		{"cluster-scoped object", webhook(all, notSystem), cluster(nodes, upd), Matched, ""},
		// A Namespace created or updated is matched on its new labels, deleted on its stored ones.
		{"namespace updated, new labels", webhook(all, enforced), nsRequest(upd, map[string]string{corev1.LabelMetadataName: "shop"}), NoMatch, ""},
		{"namespace deleted, stored labels", webhook(all, enforced), nsRequest(del, nil), Matched, ""},
		{"namespace's own name", webhook(all, notSystem), nsRequest(del, nil), NoMatch, ""},
		// Labels of a namespace not read: undecided, but only once a rule matches, as the
		// apiserver fails the lookup only then.
		{"namespace labels unknown", webhook(all, enforced), unknownNS, Undecided, "labels of namespace shop were not read"},
		{"namespace labels unknown, no rule", webhook(checktest.Rules("DELETE", "", "v1", "pods"), enforced), unknownNS, NoMatch, ""},
		{"no namespaceSelector, labels unknown", webhook(all), unknownNS, Matched, ""},
		// objectSelector: the old or the new object.
		{"object selected", webhook(all, web), in(deployments, upd), Matched, ""},
		{"object not selected", webhook(all, web), otherApp, NoMatch, "objectSelector"},
		{"old object selected", webhook(all, web), relabelled, Matched, ""},
		// CREATE has no old object, DELETE no new one: a label only on the missing side does not count.
		{"create: only the new object", webhook(all, web), withLabels(in(deployments, create), map[string]string{"app": "web"}, map[string]string{"app": "api"}), NoMatch, ""},
		{"delete: only the old object", webhook(all, web), withLabels(in(deployments, del), map[string]string{"app": "api"}, map[string]string{"app": "web"}), NoMatch, ""},
		{"delete: the old object selected", webhook(all, web), in(deployments, del), Matched, ""},
		// CONNECT carries options without metadata: a non-empty objectSelector never matches it,
		// not even one that an unlabelled object would.
		{"connect with an objectSelector", webhook(all, unlabelled), sub(in(pods, connect), "exec"), NoMatch, ""},
		{"connect without one", webhook(all), sub(in(pods, connect), "exec"), Matched, ""},
		{"unlabelled object", webhook(all, unlabelled), withLabels(in(deployments, create), nil, map[string]string{}), Matched, ""},
	})
}

func withLabels(r Request, old, new map[string]string) Request {
	r.OldLabels, r.NewLabels = old, new
	return r
}

// matchPolicy Equivalent (ShouldCallHook's second pass over the equivalent resources, earlier
// rules first) and what cannot be decided without knowing them.
func TestMatchesEquivalent(t *testing.T) {
	upd := admissionregistrationv1.Update
	beta := checktest.Rules("UPDATE", "example.com", "v1beta1", "widgets")
	known := in(widgetsV1, upd)
	known.Equivalents = []schema.GroupVersionResource{widgetsV1, widgetsBeta}
	none := in(widgetsV1, upd)
	none.Equivalents = []schema.GroupVersionResource{}
	event := in(eventsV1, upd)
	runMatches(t, []matchCase{
		{"equivalent version served", webhook(beta), known, Matched, "through equivalent example.com/v1beta1 widgets"},
		{"Exact ignores equivalents", webhook(beta, checktest.MatchPolicy(admissionregistrationv1.Exact)), known, NoMatch, ""},
		{"equivalents unknown", webhook(beta), in(widgetsV1, upd), Undecided, "example.com/v1beta1 widgets"},
		{"no equivalent served", webhook(beta), none, NoMatch, ""},
		{"another resource is not equivalent", webhook(checktest.Rules("UPDATE", "example.com", "v1beta1", "gadgets")), in(widgetsV1, upd), NoMatch, ""},
		// Core and events.k8s.io events share their storage.
		{"events across groups", webhook(checktest.Rules("UPDATE", "", "v1", "events")), event, Undecided, "v1 events"},
		{"direct match needs no equivalent", webhook(checktest.Rules("UPDATE", "", "v1", "events")), in(coreEvents, upd), Matched, ""},
	})
}

// matchConditions are CEL: not evaluated, quoted. Requests on admission configuration and the
// virtual auth resources are never sent (Webhook.Dispatch: IsExemptAdmissionConfigurationResource,
// isExcludedFromAllHooks).
func TestMatchesConditionsAndExemptions(t *testing.T) {
	upd := admissionregistrationv1.Update
	all := checktest.Rules("*", "*", "*", "*/*")
	cond := checktest.MatchConditions("not-controllers", "!request.userInfo.username.startsWith('system:')")
	m := Matches(webhook(all, cond), in(deployments, upd))
	if m.Verdict != Conditional || len(m.Conditions) != 1 || m.Conditions[0] != "not-controllers: !request.userInfo.username.startsWith('system:')" {
		t.Errorf("with matchConditions: %+v, want conditional with the expression quoted", m)
	}
	runMatches(t, []matchCase{
		{"conditions, no rule", webhook(checktest.Rules("DELETE", "", "v1", "pods"), cond), in(deployments, upd), NoMatch, ""},
		{"webhook configuration", webhook(all), cluster(vwcs, upd), NoMatch, "admission configuration"},
		{"tokenreviews", webhook(all), cluster(tokenReview, admissionregistrationv1.Create), NoMatch, "never sent"},
	})
}

// failurePolicy: Fail unless Ignore; the apiserver stores Fail when none is given.
func TestFailsClosed(t *testing.T) {
	rules := checktest.Rules("*", "*", "*", "*")
	if !webhook(rules).FailsClosed() || webhook(rules, checktest.FailurePolicy(admissionregistrationv1.Ignore)).FailsClosed() {
		t.Error("Fail must fail closed and Ignore must not")
	}
	if (Webhook{}).FailsClosed() != true {
		t.Error("a webhook without failurePolicy fails closed (the v1 default)")
	}
}

// Webhooks keeps each webhook's configuration and kind; Update carries the object's labels on both sides.
func TestWebhooksAndRequests(t *testing.T) {
	h := checktest.Webhook("mutate.example.com", "policy", "engine", checktest.Rules("CREATE", "", "v1", "pods"))
	ws := Webhooks([]*admissionregistrationv1.ValidatingWebhookConfiguration{checktest.ValidatingWebhooks("v", h)},
		[]*admissionregistrationv1.MutatingWebhookConfiguration{checktest.MutatingWebhooks("m", h)})
	if len(ws) != 2 || ws[0].String() != "ValidatingWebhookConfiguration v, webhook mutate.example.com" ||
		ws[1].String() != "MutatingWebhookConfiguration m, webhook mutate.example.com" {
		t.Errorf("webhooks = %v", ws)
	}
	d := &metav1.ObjectMeta{Namespace: "shop", Name: "web"}
	r := Update(deployments, d, shopLabels)
	if r.String() != "UPDATE apps/v1 deployments shop/web" || r.OldLabels == nil || r.NewLabels == nil {
		t.Errorf("Update = %+v (%s), want an unlabelled object on both sides", r, r)
	}
	if got := Matches(webhook(checktest.Rules("UPDATE", "apps", "v1", "deployments"),
		checktest.ObjectSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}})), r); got.Verdict != Matched {
		t.Errorf("an unlabelled object updated: %+v, want matched", got)
	}
}
