package admission

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Verdict is whether a webhook is called for a request.
type Verdict string

const (
	// NoMatch: the webhook is not called for the request.
	NoMatch Verdict = "no"
	// Matched: the webhook is called for the request.
	Matched Verdict = "yes"
	// Conditional: rules and selectors match, and the webhook's matchConditions (CEL, not
	// evaluated here) decide.
	Conditional Verdict = "conditional"
	// Undecided: it depends on what is not known (Match.Why says what).
	Undecided Verdict = "undecided"
)

// Match is whether a webhook is called for a request, and why.
type Match struct {
	Verdict Verdict
	// Rule is the rule that matched, as `OPERATIONS groups/versions resources (scope)`, with
	// "through equivalent ..." when it matched the same objects served under another version.
	Rule string
	// Conditions are the webhook's matchConditions, `name: expression`, when Conditional.
	Conditions []string
	// Why says which test failed (NoMatch) or what is not known (Undecided).
	Why string
}

// Matches says whether the apiserver calls the webhook for the request, in the order
// ShouldCallHook tests it (k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go):
// namespaceSelector, objectSelector, rules (then the equivalent resources with matchPolicy
// Equivalent), matchConditions. Requests on admission configuration itself and on the virtual
// auth resources are never sent to webhooks (Dispatch).
func Matches(w Webhook, r Request) Match {
	if why, ok := exempt(r.Resource.GroupResource()); ok {
		return Match{Verdict: NoMatch, Why: why}
	}
	nsMatches, nsUnknown := namespaceSelector(w, r)
	if !nsMatches && nsUnknown == "" {
		return Match{Verdict: NoMatch, Why: "its namespaceSelector does not select namespace " + r.namespace()}
	}
	if !objectSelector(w, r) {
		return Match{Verdict: NoMatch, Why: "its objectSelector selects neither the old nor the new object"}
	}
	m := Match{Verdict: Matched}
	if rule, ok := matchingRule(w.Rules, r, r.Resource); ok {
		m.Rule = ruleString(rule)
	} else if !w.equivalent() {
		return Match{Verdict: NoMatch, Why: "no rule matches " + r.String()}
	} else if rule, gvr, ok := equivalentRule(w.Rules, r); ok {
		m.Rule = ruleString(rule) + " through equivalent " + gvrString(gvr)
	} else if rule, gvr, ok := possiblyEquivalentRule(w.Rules, r); ok {
		return Match{Verdict: Undecided, Rule: ruleString(rule), Why: fmt.Sprintf(
			"matchPolicy Equivalent: called if the apiserver serves %s as the same objects as %s, which the scan does not know",
			gvrString(gvr), gvrString(r.Resource))}
	} else {
		return Match{Verdict: NoMatch, Why: "no rule matches " + r.String()}
	}
	// A namespace that cannot be looked up fails the request only once a rule matches.
	if nsUnknown != "" {
		return Match{Verdict: Undecided, Rule: m.Rule, Why: nsUnknown}
	}
	if len(w.MatchConditions) > 0 {
		m.Verdict = Conditional
		for _, c := range w.MatchConditions {
			m.Conditions = append(m.Conditions, c.Name+": "+c.Expression)
		}
	}
	return m
}

// exempt says why requests on a resource are never sent to webhooks: admission configuration
// (rules.IsExemptAdmissionConfigurationResource, so a person can always remove a webhook that
// blocks everything) and the virtual auth resources (ExcludeAdmissionWebhookVirtualResources,
// beta and on from v1.37: k8s.io/kubernetes pkg/kubeapiserver/admission/exclusion).
func exempt(gr schema.GroupResource) (string, bool) {
	switch gr.Group {
	case admissionregistrationv1.GroupName:
		switch gr.Resource {
		case "validatingwebhookconfigurations", "mutatingwebhookconfigurations",
			"validatingadmissionpolicies", "validatingadmissionpolicybindings",
			"mutatingadmissionpolicies", "mutatingadmissionpolicybindings":
			return "requests on admission configuration are never sent to webhooks", true
		}
	case "authentication.k8s.io":
		if gr.Resource == "tokenreviews" || gr.Resource == "selfsubjectreviews" {
			return "requests on " + gr.String() + " are never sent to webhooks", true
		}
	case "authorization.k8s.io":
		switch gr.Resource {
		case "subjectaccessreviews", "selfsubjectaccessreviews", "localsubjectaccessreviews", "selfsubjectrulesreviews":
			return "requests on " + gr.String() + " are never sent to webhooks", true
		}
	}
	return "", false
}

// namespaceSelector follows MatchNamespaceSelector (predicates/namespace/matcher.go): a
// cluster-scoped object other than a Namespace always matches; a Namespace created or updated
// is matched on its new labels, anything else in a namespace on the namespace's labels. unknown
// says why it cannot be told (the namespace's labels were not read).
func namespaceSelector(w Webhook, r Request) (matches bool, unknown string) {
	ns := r.namespace()
	if ns == "" && r.Resource.Resource != "namespaces" {
		return true, ""
	}
	sel, err := selector(w.NamespaceSelector)
	if err != nil {
		return false, "its namespaceSelector does not parse: " + err.Error()
	}
	if sel.Empty() {
		return true, ""
	}
	nsLabels := r.NamespaceLabels
	if r.Resource.Resource == "namespaces" && r.Subresource == "" &&
		(r.Operation == admissionregistrationv1.Create || r.Operation == admissionregistrationv1.Update) {
		nsLabels = r.NewLabels
	}
	if nsLabels == nil {
		return false, fmt.Sprintf("its namespaceSelector (%s) decides, and the labels of namespace %s were not read", sel, ns)
	}
	return sel.Matches(labels.Set(nsLabels)), ""
}

// objectSelector follows MatchObjectSelector (predicates/object/matcher.go): an empty selector
// matches; otherwise the old or the new object must match, and a request without that object
// (CREATE has no old one, DELETE no new one, CONNECT neither) does not match on it.
func objectSelector(w Webhook, r Request) bool {
	sel, err := selector(w.ObjectSelector)
	if err != nil {
		return false // the apiserver fails such a request; a stored webhook's selector always parses
	}
	if sel.Empty() {
		return true
	}
	if l, ok := r.newObject(); ok && sel.Matches(labels.Set(l)) {
		return true
	}
	l, ok := r.oldObject()
	return ok && sel.Matches(labels.Set(l))
}

// selector parses a webhook's selector; nil is the empty selector the apiserver stores for it
// (SetDefaults_ValidatingWebhook), which selects everything.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// matchingRule returns the first rule that matches the request made in gvr (rules.Matcher.Matches).
func matchingRule(rules []admissionregistrationv1.RuleWithOperations, r Request, gvr schema.GroupVersionResource) (admissionregistrationv1.RuleWithOperations, bool) {
	for _, rule := range rules {
		if ruleMatches(rule, r, gvr) {
			return rule, true
		}
	}
	return admissionregistrationv1.RuleWithOperations{}, false
}

// equivalentRule tries the request's equivalent resources, earlier rules first, as ShouldCallHook does.
func equivalentRule(rules []admissionregistrationv1.RuleWithOperations, r Request) (admissionregistrationv1.RuleWithOperations, schema.GroupVersionResource, bool) {
	for _, rule := range rules {
		for _, gvr := range r.Equivalents {
			if gvr != r.Resource && ruleMatches(rule, r, gvr) {
				return rule, gvr, true
			}
		}
	}
	return admissionregistrationv1.RuleWithOperations{}, schema.GroupVersionResource{}, false
}

// possiblyEquivalentRule, when the equivalents are not known, finds a rule that would match
// the same objects served under a version it names: the same group and resource (a CRD's or a
// built-in API's other versions), or core and events.k8s.io events, which share their storage
// (k8s.io/kubernetes pkg/kubeapiserver/default_storage_factory_builder.go).
func possiblyEquivalentRule(rules []admissionregistrationv1.RuleWithOperations, r Request) (admissionregistrationv1.RuleWithOperations, schema.GroupVersionResource, bool) {
	if r.Equivalents != nil {
		return admissionregistrationv1.RuleWithOperations{}, schema.GroupVersionResource{}, false
	}
	groups := []string{r.Resource.Group}
	if r.Resource.Resource == "events" && (r.Resource.Group == "" || r.Resource.Group == "events.k8s.io") {
		groups = []string{"", "events.k8s.io"}
	}
	for _, rule := range rules {
		for _, g := range groups {
			if !slices.Contains(rule.APIGroups, g) && !slices.Contains(rule.APIGroups, "*") {
				continue
			}
			for _, v := range rule.APIVersions {
				gvr := schema.GroupVersionResource{Group: g, Version: v, Resource: r.Resource.Resource}
				if v != "*" && gvr != r.Resource && ruleMatches(rule, r, gvr) {
					return rule, gvr, true
				}
			}
		}
	}
	return admissionregistrationv1.RuleWithOperations{}, schema.GroupVersionResource{}, false
}

// ruleMatches follows rules.Matcher.Matches (predicates/rules/rules.go) for the request made in
// gvr: scope, operation, group, version and resource.
func ruleMatches(rule admissionregistrationv1.RuleWithOperations, r Request, gvr schema.GroupVersionResource) bool {
	return scopeMatches(rule.Scope, r, gvr) && operationMatches(rule.Operations, r.Operation) &&
		exactOrWildcard(rule.APIGroups, gvr.Group) && exactOrWildcard(rule.APIVersions, gvr.Version) &&
		resourceMatches(rule.Resources, gvr.Resource, r.Subresource)
}

// scopeMatches: "Namespaced" is a request in a namespace, "Cluster" one on a cluster-scoped
// object; a Namespace object is cluster-scoped although the apiserver gives its request a namespace.
func scopeMatches(scope *admissionregistrationv1.ScopeType, r Request, gvr schema.GroupVersionResource) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	switch *scope {
	case admissionregistrationv1.NamespacedScope:
		return gvr != namespaces && r.namespace() != ""
	case admissionregistrationv1.ClusterScope:
		return gvr == namespaces || r.namespace() == ""
	}
	return false
}

func operationMatches(ops []admissionregistrationv1.OperationType, op admissionregistrationv1.OperationType) bool {
	return slices.Contains(ops, admissionregistrationv1.OperationAll) || slices.Contains(ops, op)
}

func exactOrWildcard(items []string, requested string) bool {
	return slices.Contains(items, "*") || slices.Contains(items, requested)
}

// resourceMatches: "pods" is the pods themselves only, "pods/status" that subresource, "pods/*"
// the pods and every subresource, "*" every resource without its subresources, "*/*" everything.
func resourceMatches(resources []string, resource, subresource string) bool {
	for _, rs := range resources {
		res, sub, _ := strings.Cut(rs, "/")
		if (res == "*" || res == resource) && (sub == "*" || sub == subresource) {
			return true
		}
	}
	return false
}

// ruleString renders a rule as `UPDATE,DELETE apps/v1 deployments (Namespaced)`.
func ruleString(rule admissionregistrationv1.RuleWithOperations) string {
	ops := make([]string, len(rule.Operations))
	for i, op := range rule.Operations {
		ops[i] = string(op)
	}
	groups := make([]string, len(rule.APIGroups))
	for i, g := range rule.APIGroups {
		if g == "" {
			g = "core"
		}
		groups[i] = g
	}
	s := fmt.Sprintf("%s %s/%s %s", strings.Join(ops, ","), strings.Join(groups, ","),
		strings.Join(rule.APIVersions, ","), strings.Join(rule.Resources, ","))
	if rule.Scope != nil && *rule.Scope != admissionregistrationv1.AllScopes {
		s += " (" + string(*rule.Scope) + ")"
	}
	return s
}

func gvrString(gvr schema.GroupVersionResource) string {
	return gvr.GroupVersion().String() + " " + gvr.Resource
}
