package admission

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kinds of the configurations a Webhook comes from.
const (
	KindValidating = "ValidatingWebhookConfiguration"
	KindMutating   = "MutatingWebhookConfiguration"
)

// Webhook is one webhook of a validating or mutating webhook configuration: the fields that
// decide which requests it is called for, where it is called and what a failed call does.
type Webhook struct {
	// Kind is KindValidating or KindMutating; Config is the configuration's name.
	Kind, Config string
	// Name is the webhook's name, the one `failed calling webhook "NAME"` quotes.
	Name              string
	ClientConfig      admissionregistrationv1.WebhookClientConfig
	Rules             []admissionregistrationv1.RuleWithOperations
	FailurePolicy     *admissionregistrationv1.FailurePolicyType
	MatchPolicy       *admissionregistrationv1.MatchPolicyType
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	MatchConditions   []admissionregistrationv1.MatchCondition
}

// Webhooks returns every webhook of the configurations, validating first, in their order.
func Webhooks(validating []*admissionregistrationv1.ValidatingWebhookConfiguration, mutating []*admissionregistrationv1.MutatingWebhookConfiguration) []Webhook {
	var out []Webhook
	for _, c := range validating {
		for _, w := range c.Webhooks {
			out = append(out, Webhook{Kind: KindValidating, Config: c.Name, Name: w.Name, ClientConfig: w.ClientConfig,
				Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
				NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector, MatchConditions: w.MatchConditions})
		}
	}
	for _, c := range mutating {
		for _, w := range c.Webhooks {
			out = append(out, Webhook{Kind: KindMutating, Config: c.Name, Name: w.Name, ClientConfig: w.ClientConfig,
				Rules: w.Rules, FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
				NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector, MatchConditions: w.MatchConditions})
		}
	}
	return out
}

// FailsClosed says whether a call that cannot be made rejects the request: failurePolicy Fail,
// which the apiserver stores when none is given (SetDefaults_ValidatingWebhook, v1).
func (w Webhook) FailsClosed() bool {
	return w.FailurePolicy == nil || *w.FailurePolicy == admissionregistrationv1.Fail
}

// String names the webhook the way evidence does: `ValidatingWebhookConfiguration policy, webhook validate.example.com`.
func (w Webhook) String() string {
	return fmt.Sprintf("%s %s, webhook %s", w.Kind, w.Config, w.Name)
}

// equivalent says whether the webhook is also called for the same objects served under another
// group or version: matchPolicy Equivalent, which the apiserver stores when none is given.
func (w Webhook) equivalent() bool {
	return w.MatchPolicy == nil || *w.MatchPolicy == admissionregistrationv1.Equivalent
}

func (w Webhook) failurePolicy() string {
	if w.FailurePolicy == nil {
		return string(admissionregistrationv1.Fail)
	}
	return string(*w.FailurePolicy)
}

// Reach says which requests the webhook is called for, from its configuration alone: every rule,
// then the selectors and matchConditions that narrow them. While its backend cannot answer and it
// fails closed, these are the requests it rejects.
func (w Webhook) Reach() string {
	rules := make([]string, len(w.Rules))
	for i, r := range w.Rules {
		rules[i] = ruleString(r)
	}
	s := strings.Join(rules, "; ")
	if s == "" {
		s = "no rule"
	}
	var narrow []string
	if w.NamespaceSelector != nil && (len(w.NamespaceSelector.MatchLabels) > 0 || len(w.NamespaceSelector.MatchExpressions) > 0) {
		narrow = append(narrow, "namespaceSelector "+metav1.FormatLabelSelector(w.NamespaceSelector))
	}
	if w.ObjectSelector != nil && (len(w.ObjectSelector.MatchLabels) > 0 || len(w.ObjectSelector.MatchExpressions) > 0) {
		narrow = append(narrow, "objectSelector "+metav1.FormatLabelSelector(w.ObjectSelector))
	}
	if n := len(w.MatchConditions); n > 0 {
		narrow = append(narrow, fmt.Sprintf("%d matchCondition(s)", n))
	}
	if len(narrow) > 0 {
		s += ", where " + strings.Join(narrow, ", ")
	}
	return s
}
