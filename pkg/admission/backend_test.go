package admission

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// services is a scan's read of the Services webhooks call.
type services map[string]*snapshot.BackendService

func (s services) BackendService(namespace, name string) *snapshot.BackendService {
	return s[namespace+"/"+name]
}

func read(b ...*snapshot.BackendService) services {
	out := services{}
	for _, x := range b {
		out[x.Namespace+"/"+x.Name] = x
	}
	return out
}

// Messages as the apiserver words them: ErrCallingWebhook.Error (k8s.io/apiserver
// pkg/util/webhook/error.go) wrapping the dispatcher's "failed to call webhook" (validating/dispatcher.go,
// callHook), and a webhook that answered and denied (not a failure to call it).
const (
	notFoundMsg = `Internal error occurred: failed calling webhook "validate.example.com": failed to call webhook: ` +
		`Post "https://engine.policy.svc:443/validate?timeout=10s": service "engine" not found`
	x509Msg = `Internal error occurred: failed calling webhook "validate.example.com": failed to call webhook: ` +
		`Post "https://engine.policy.svc:443/validate?timeout=10s": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2026-06-12T12:00:00Z is after 2026-06-01T00:00:00Z`
	otherHookMsg = `Internal error occurred: failed calling webhook "other.example.com": failed to call webhook: ` +
		`Post "https://other.policy.svc:443/validate?timeout=10s": context deadline exceeded`
	deniedMsg = `admission webhook "validate.example.com" denied the request: replicas must be at least 2`
)

type backendCase struct {
	name     string
	webhook  Webhook
	read     services
	failures []string
	want     State
	reason   string   // a part of Backend.Reason
	evidence []string // parts of the evidence lines, each in some line
}

func runBackends(t *testing.T, judge func(backendCase) Backend, cases []backendCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := judge(tc)
			if b.State != tc.want || !strings.Contains(b.Reason, tc.reason) {
				t.Fatalf("backend = %s (%s), want %s (%q)\nevidence:\n  %s", b.State, b.Reason, tc.want, tc.reason, strings.Join(b.Evidence, "\n  "))
			}
			all := strings.Join(b.Evidence, "\n")
			for _, e := range tc.evidence {
				if !strings.Contains(all, e) {
					t.Errorf("evidence lacks %q:\n  %s", e, strings.Join(b.Evidence, "\n  "))
				}
			}
		})
	}
}

// A webhook's Service judged as the apiserver's resolvers use it (k8s.io/apiserver
// pkg/util/proxy/proxy.go: ResolveCluster, ResolveEndpoint, findServicePort, RandomEndpoint),
// and the recent failures that quote it.
func TestWebhookBackend(t *testing.T) {
	rules := checktest.Rules("UPDATE", "apps", "v1", "deployments")
	hook := webhook(rules)
	svc := checktest.WebhookServiceObject("policy", "engine")
	headless := checktest.WebhookServiceObject("policy", "engine")
	headless.Spec.ClusterIP, headless.Spec.ClusterIPs = corev1.ClusterIPNone, nil
	external := checktest.WebhookServiceObject("policy", "engine")
	external.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "policy.example.net"}
	readyNilSlice := checktest.EndpointSlice(svc, "https", 1, 0, 0)
	readyNilSlice.Endpoints[0].Conditions.Ready = nil // unknown readiness counts as ready (RandomEndpoint)
	up := read(checktest.Backend("policy", "engine", svc, checktest.EndpointSlice(svc, "https", 2, 1, 0)))
	runBackends(t, func(tc backendCase) Backend { return WebhookBackend(tc.webhook, tc.read, tc.failures) }, []backendCase{
		{name: "up", webhook: hook, read: up, want: Available, reason: "2 ready endpoint(s)",
			evidence: []string{"ValidatingWebhookConfiguration policy, webhook validate.example.com: failurePolicy Fail, calls Service policy/engine port 443",
				"Service policy/engine port 443 (https): 2/3 endpoints ready"}},
		{name: "Service missing", webhook: hook, read: read(checktest.Backend("policy", "engine", nil)), want: Unavailable,
			reason: "Service policy/engine does not exist", evidence: []string{"Service policy/engine: not found"}},
		{name: "no ready endpoint", webhook: hook, read: read(checktest.Backend("policy", "engine", svc, checktest.EndpointSlice(svc, "https", 0, 2, 0))),
			want: Unavailable, reason: "has no ready endpoint", evidence: []string{"0/2 endpoints ready"}},
		{name: "no EndpointSlice", webhook: hook, read: read(checktest.Backend("policy", "engine", svc)),
			want: Unavailable, reason: "has no ready endpoint", evidence: []string{"0/0 endpoints ready (no EndpointSlice)"}},
		{name: "readiness unknown", webhook: hook, read: read(checktest.Backend("policy", "engine", svc, readyNilSlice)), want: Available},
		// findServicePort: the port called must be one of the Service's ports.
		{name: "port not on the Service", webhook: webhook(rules, checktest.WebhookPort(8443)), read: up, want: Unavailable,
			reason: "has no port 8443", evidence: []string{"no port 8443 (ports: 443)"}},
		// RandomEndpoint: only slice ports named as the Service's port count.
		{name: "endpoints on another port name", webhook: hook, read: read(checktest.Backend("policy", "engine", svc, checktest.EndpointSlice(svc, "metrics", 2, 0, 0))),
			want: Unavailable, reason: "no ready endpoint", evidence: []string{"0/0 endpoints ready"}},
		{name: "only terminating endpoints serve", webhook: hook, read: read(checktest.Backend("policy", "engine", svc, checktest.EndpointSlice(svc, "https", 0, 0, 1))),
			want: Unknown, reason: "1 terminating ones still serve", evidence: []string{"0/1 endpoints ready, 1 terminating still serving"}},
		// ResolveCluster refuses a headless Service; ResolveEndpoint (aggregator routing) takes it.
		{name: "headless", webhook: hook, read: read(checktest.Backend("policy", "engine", headless, checktest.EndpointSlice(headless, "https", 1, 0, 0))),
			want: Unknown, reason: "--enable-aggregator-routing"},
		{name: "ExternalName", webhook: hook, read: read(checktest.Backend("policy", "engine", external)), want: Unknown, reason: "ExternalName policy.example.net"},
		{name: "Service not read", webhook: hook, read: services{}, want: Unknown, reason: "was not read"},
		{name: "URL, nothing known", webhook: webhook(rules, checktest.WebhookURL("https://policy.example.net:8443/validate?token=x")),
			want: Unknown, reason: "https://policy.example.net:8443", evidence: []string{"calls URL https://policy.example.net:8443"}},
		// Recent failures: a certificate that fails every call while the Service is up.
		{name: "up, but the certificate expired", webhook: hook, read: up, failures: []string{x509Msg}, want: Unavailable,
			reason: "certificate: x509: certificate has expired or is not yet valid", evidence: []string{"recent failure: Internal error occurred: failed calling webhook"}},
		{name: "URL failing", webhook: webhook(rules, checktest.WebhookURL("https://policy.example.net/validate")), failures: []string{x509Msg},
			want: Unavailable, reason: "x509"},
		{name: "not read, failing", webhook: hook, read: services{}, failures: []string{notFoundMsg}, want: Unavailable,
			reason: "its Service engine was not found"},
		// The missing Service is the cause; the failure it makes is evidence.
		{name: "missing and failing", webhook: hook, read: read(checktest.Backend("policy", "engine", nil)), failures: []string{notFoundMsg},
			want: Unavailable, reason: "does not exist", evidence: []string{`service "engine" not found`}},
		// Another webhook's failures, and a webhook that answered and denied, are not this one failing.
		{name: "another webhook failing", webhook: hook, read: up, failures: []string{otherHookMsg}, want: Available},
		{name: "a denial is an answer", webhook: hook, read: up, failures: []string{deniedMsg}, want: Available},
	})
}

// failurePolicy Ignore: the backend is down all the same, but a failed call lets the write pass.
func TestIgnoreDoesNotBlock(t *testing.T) {
	w := webhook(checktest.Rules("UPDATE", "apps", "v1", "deployments"), checktest.FailurePolicy(admissionregistrationv1.Ignore))
	b := WebhookBackend(w, read(checktest.Backend("policy", "engine", nil)), nil)
	if b.State != Unavailable || w.FailsClosed() {
		t.Errorf("Ignore with its Service gone: backend %s, fails closed %v; want unavailable and open", b.State, w.FailsClosed())
	}
	if !strings.Contains(b.Evidence[0], "failurePolicy Ignore") {
		t.Errorf("evidence does not state the failurePolicy: %v", b.Evidence)
	}
}

// A CRD's conversion webhook (spec.conversion.webhook.clientConfig), and the failures that
// name its group and kind (apiextensions-apiserver pkg/apiserver/conversion/webhook_converter.go,
// webhookConverter.Convert: "conversion webhook for %v failed: %v" with the object's GroupVersionKind).
func TestConversionBackend(t *testing.T) {
	crd := checktest.ConversionCRD("example.com", "Widget", "widgets", "widgets-system", "converter")
	svc := checktest.WebhookServiceObject("widgets-system", "converter")
	failed := `conversion webhook for example.com/v1beta1, Kind=Widget failed: Post "https://converter.widgets-system.svc:443/convert?timeout=30s": service "converter" not found`
	otherKind := `conversion webhook for example.com/v1beta1, Kind=WidgetSet failed: Post "https://x.widgets-system.svc:443/convert?timeout=30s": context deadline exceeded`
	cases := []struct {
		name     string
		crd      string
		read     services
		failures []string
		want     State
		reason   string
	}{
		{"no webhook", "none", nil, nil, Available, "without a webhook"},
		{"Service missing", "webhook", read(checktest.Backend("widgets-system", "converter", nil)), []string{failed}, Unavailable, "does not exist"},
		{"up", "webhook", read(checktest.Backend("widgets-system", "converter", svc, checktest.EndpointSlice(svc, "https", 1, 0, 0))), nil, Available, ""},
		{"not read, failing", "webhook", services{}, []string{failed}, Unavailable, "its Service converter was not found"},
		{"another kind failing", "webhook", read(checktest.Backend("widgets-system", "converter", svc, checktest.EndpointSlice(svc, "https", 1, 0, 0))),
			[]string{otherKind}, Available, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := crd
			if tc.crd == "none" {
				c = checktest.ConversionCRD("example.com", "Widget", "widgets", "", "")
			}
			b := ConversionBackend(c, tc.read, tc.failures)
			if b.State != tc.want || !strings.Contains(b.Reason, tc.reason) {
				t.Errorf("backend = %s (%s), want %s (%q); evidence %v", b.State, b.Reason, tc.want, tc.reason, b.Evidence)
			}
			if tc.crd != "none" && !strings.HasPrefix(b.Evidence[0], "CustomResourceDefinition widgets.example.com: conversion webhook, calls Service widgets-system/converter port 443") {
				t.Errorf("evidence = %v", b.Evidence)
			}
		})
	}
}

// An APIService's Service, with its Available condition (written by kube-aggregator's
// AvailableConditionController) counted as a failure when False.
func TestAPIServiceBackend(t *testing.T) {
	svc := checktest.WebhookServiceObject("kube-system", "metrics-server")
	up := read(checktest.Backend("kube-system", "metrics-server", svc, checktest.EndpointSlice(svc, "https", 1, 0, 0)))
	cases := []struct {
		name       string
		apiService string
		status     string
		reason     string
		message    string
		read       services
		want       State
		why        string
	}{
		{"local", "", "True", "Local", "Local APIServices are always available", nil, Available, "itself"},
		{"up", "metrics-server", "True", "Passed", "all checks passed", up, Available, "1 ready endpoint"},
		{"Service missing", "metrics-server", "False", "ServiceNotFound", `service/metrics-server in "kube-system" is not present`,
			read(checktest.Backend("kube-system", "metrics-server", nil)), Unavailable, "does not exist"},
		{"discovery failing on a certificate", "metrics-server", "False", "FailedDiscoveryCheck",
			`failing or missing response from https://10.96.0.30:443/apis/metrics.k8s.io/v1beta1: Get "https://10.96.0.30:443/apis/metrics.k8s.io/v1beta1": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
			up, Unavailable, "x509: certificate signed by unknown authority"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := checktest.APIService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", tc.apiService, tc.status, tc.reason, tc.message)
			b := APIServiceBackend(a, tc.read, nil)
			if b.State != tc.want || !strings.Contains(b.Reason, tc.why) {
				t.Errorf("backend = %s (%s), want %s (%q); evidence %v", b.State, b.Reason, tc.want, tc.why, b.Evidence)
			}
		})
	}
	// A namespace condition's discovery failure counts for its own group/version only.
	a := checktest.APIService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "True", "Passed", "all checks passed")
	other := "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: custom.metrics.k8s.io/v1beta1: stale GroupVersion discovery: custom.metrics.k8s.io/v1beta1"
	own := "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request"
	if b := APIServiceBackend(a, up, []string{other}); b.State != Available {
		t.Errorf("another group's failure counted: %s (%s)", b.State, b.Reason)
	}
	if b := APIServiceBackend(a, up, []string{own}); b.State != Unavailable || !strings.Contains(b.Reason, "unable to handle the request") {
		t.Errorf("its own group's failure: %s (%s), want unavailable, quoting it", b.State, b.Reason)
	}
}
