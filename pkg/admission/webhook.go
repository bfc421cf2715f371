package admission

import (
	"fmt"

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
