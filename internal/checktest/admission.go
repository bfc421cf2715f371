package checktest

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ValidatingWebhooks is a ValidatingWebhookConfiguration with the webhooks (see Webhook).
func ValidatingWebhooks(name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-vwc-" + name)},
		Webhooks:   hooks,
	}
}

// MutatingWebhooks is a MutatingWebhookConfiguration with the webhooks (see Webhook), with the
// reinvocationPolicy the apiserver stores (Never).
func MutatingWebhooks(name string, hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-mwc-" + name)},
	}
	for _, h := range hooks {
		c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: h.Name, ClientConfig: h.ClientConfig,
			Rules: h.Rules, FailurePolicy: h.FailurePolicy, MatchPolicy: h.MatchPolicy, NamespaceSelector: h.NamespaceSelector,
			ObjectSelector: h.ObjectSelector, SideEffects: h.SideEffects, TimeoutSeconds: h.TimeoutSeconds,
			AdmissionReviewVersions: h.AdmissionReviewVersions, MatchConditions: h.MatchConditions,
			ReinvocationPolicy: ptr.To(admissionregistrationv1.NeverReinvocationPolicy)})
	}
	return c
}

// WebhookOption shapes one webhook.
type WebhookOption func(*admissionregistrationv1.ValidatingWebhook)

// Webhook calls Service svcNamespace/svcName on port 443 for the rules, with what the apiserver
// stores for the fields left out (SetDefaults_ValidatingWebhook, SetDefaults_ServiceReference):
// failurePolicy Fail, matchPolicy Equivalent, empty selectors, timeoutSeconds 10.
func Webhook(name, svcNamespace, svcName string, rules []admissionregistrationv1.RuleWithOperations, opts ...WebhookOption) admissionregistrationv1.ValidatingWebhook {
	h := admissionregistrationv1.ValidatingWebhook{
		Name: name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: svcNamespace, Name: svcName, Path: ptr.To("/validate"), Port: ptr.To[int32](443)}},
		Rules:                   rules,
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector:       &metav1.LabelSelector{},
		ObjectSelector:          &metav1.LabelSelector{},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To[int32](10),
		AdmissionReviewVersions: []string{"v1"},
	}
	for _, o := range opts {
		o(&h)
	}
	return h
}

// Rules is one rule as stored (scope "*" unless set): operations, groups, versions and
// resources each comma-separated ("" is the core group).
func Rules(ops, groups, versions, resources string) []admissionregistrationv1.RuleWithOperations {
	var operations []admissionregistrationv1.OperationType
	for _, op := range strings.Split(ops, ",") {
		operations = append(operations, admissionregistrationv1.OperationType(op))
	}
	return []admissionregistrationv1.RuleWithOperations{{Operations: operations, Rule: admissionregistrationv1.Rule{
		APIGroups: strings.Split(groups, ","), APIVersions: strings.Split(versions, ","),
		Resources: strings.Split(resources, ","), Scope: ptr.To(admissionregistrationv1.AllScopes)}}}
}

// FailurePolicy sets the webhook's failurePolicy.
func FailurePolicy(p admissionregistrationv1.FailurePolicyType) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) { h.FailurePolicy = &p }
}

// MatchPolicy sets the webhook's matchPolicy.
func MatchPolicy(p admissionregistrationv1.MatchPolicyType) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) { h.MatchPolicy = &p }
}

// Scope sets the scope of every rule.
func Scope(s admissionregistrationv1.ScopeType) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) {
		for i := range h.Rules {
			h.Rules[i].Scope = &s
		}
	}
}

// NamespaceSelector and ObjectSelector set the webhook's selectors.
func NamespaceSelector(s *metav1.LabelSelector) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) { h.NamespaceSelector = s }
}

// ObjectSelector sets the webhook's objectSelector.
func ObjectSelector(s *metav1.LabelSelector) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) { h.ObjectSelector = s }
}

// MatchConditions sets the webhook's matchConditions as name, expression pairs.
func MatchConditions(nameExpr ...string) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) {
		for i := 0; i+1 < len(nameExpr); i += 2 {
			h.MatchConditions = append(h.MatchConditions, admissionregistrationv1.MatchCondition{Name: nameExpr[i], Expression: nameExpr[i+1]})
		}
	}
}

// WebhookURL makes the webhook call a URL instead of a Service.
func WebhookURL(u string) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) {
		h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &u}
	}
}

// WebhookPort sets the Service port the webhook calls.
func WebhookPort(port int32) WebhookOption {
	return func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.Service.Port = &port }
}

// WebhookServiceObject is a ClusterIP Service with one port, named "https", 443 to 8443: what a
// webhook's chart installs.
func WebhookServiceObject(namespace, name string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-Service-" + name)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP}}},
	}
}

// EndpointSlice is the slice the endpointslice controller writes for svc's port portName: ready
// endpoints, endpoints not ready, and endpoints terminating that still serve, each a pod.
func EndpointSlice(svc *corev1.Service, portName string, ready, notReady, terminating int) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-abcde", Labels: map[string]string{
			discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To[int32](8443), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	add := func(n int, readyC, serving, term bool) {
		for range n {
			i := len(es.Endpoints)
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.244.0.%d", 10+i)},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(readyC), Serving: ptr.To(serving), Terminating: ptr.To(term)},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: svc.Namespace, Name: fmt.Sprintf("%s-%d", svc.Name, i)},
			})
		}
	}
	add(ready, true, true, false)
	add(notReady, false, false, false)
	add(terminating, false, true, true)
	return es
}

// Backend is the read of a Service a webhook calls: svc nil for one found missing.
func Backend(namespace, name string, svc *corev1.Service, slices ...*discoveryv1.EndpointSlice) *snapshot.BackendService {
	return &snapshot.BackendService{Namespace: namespace, Name: name, Service: svc, EndpointSlices: slices}
}

// ConversionCRD is a CustomResourceDefinition whose conversion webhook calls Service
// svcNamespace/svcName on port 443 (strategy None without svcName), as the apiextensions
// apiserver stores it.
func ConversionCRD(group, kind, plural, svcNamespace, svcName string) *unstructured.Unstructured {
	conversion := map[string]any{"strategy": "None"}
	if svcName != "" {
		conversion = map[string]any{"strategy": "Webhook", "webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{"service": map[string]any{
				"namespace": svcNamespace, "name": svcName, "path": "/convert", "port": int64(443)}}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names":      map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"conversion": conversion,
			"versions": []any{
				map[string]any{"name": "v1", "served": true, "storage": true},
				map[string]any{"name": "v1beta1", "served": true, "storage": false}}},
	}}
}
