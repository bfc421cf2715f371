package admission

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
)

// Reach names every rule and then what narrows them; the empty selectors the apiserver stores
// for none select everything and are left out.
func TestWebhookReach(t *testing.T) {
	webhook := func(opts ...checktest.WebhookOption) Webhook {
		rules := append(checktest.Rules("UPDATE", "apps", "v1", "deployments"), checktest.Rules("CREATE", "", "v1", "pods/ephemeralcontainers")...)
		return Webhooks([]*admissionregistrationv1.ValidatingWebhookConfiguration{
			checktest.ValidatingWebhooks("policy", checktest.Webhook("validate.example.com", "policy", "engine", rules, opts...))}, nil)[0]
	}
	for _, tc := range []struct {
		name string
		w    Webhook
		want string
	}{
		{"everything", webhook(), "UPDATE apps/v1 deployments; CREATE core/v1 pods/ephemeralcontainers"},
		{"narrowed", webhook(
			checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"policy": "enforced"}}),
			checktest.ObjectSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}),
			checktest.MatchConditions("not-system", "!request.userInfo.username.startsWith('system:')")),
			"UPDATE apps/v1 deployments; CREATE core/v1 pods/ephemeralcontainers, where namespaceSelector policy=enforced, objectSelector !skip, 1 matchCondition(s)"},
		{"no rule", Webhook{}, "no rule"},
	} {
		if got := tc.w.Reach(); got != tc.want {
			t.Errorf("%s: Reach() = %q, want %q", tc.name, got, tc.want)
		}
	}
}
