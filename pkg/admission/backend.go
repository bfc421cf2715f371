package admission

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// State is whether the apiserver can call a backend.
type State string

const (
	// Available: its Service has a ready endpoint on the port called, and no recent call failed.
	Available State = "available"
	// Unavailable: its Service is missing, has no such port or no ready endpoint, or recent
	// calls failed.
	Unavailable State = "unavailable"
	// Unknown: the scan cannot tell (a URL outside the cluster, a Service not read).
	Unknown State = "unknown"
)

// Backend is whether the apiserver can call a webhook, a conversion webhook or an aggregated
// API, and why.
type Backend struct {
	State State
	// Reason is why, in words a person acts on: "Service policy/engine does not exist".
	Reason string
	// Evidence are the facts: who calls what, the Service and its endpoints, recent failures.
	Evidence []string
}

// Services looks up the Services a scan read; *snapshot.Snapshot is one.
type Services interface {
	BackendService(namespace, name string) *snapshot.BackendService
}

// maxQuoted bounds the failures quoted in evidence, and quoteLen each quote.
const (
	maxQuoted = 3
	quoteLen  = 240
)

// WebhookBackend judges the backend of a webhook. failures are recent messages from events and
// conditions, newest last; those that quote `failed calling webhook "NAME"` for this webhook's
// name count (a webhook with failurePolicy Ignore fails silently, so only Fail ones leave them).
func WebhookBackend(w Webhook, services Services, failures []string) Backend {
	mark := fmt.Sprintf("failed calling webhook %q", w.Name)
	var quoted []string
	for _, f := range failures {
		if strings.Contains(f, mark) {
			quoted = append(quoted, f)
		}
	}
	head := fmt.Sprintf("%s: failurePolicy %s, calls %s", w, w.failurePolicy(), describeTarget(w.ClientConfig))
	return judge(head, w.ClientConfig, services, quoted)
}

// ConversionBackend judges the conversion webhook of a CustomResourceDefinition, as the
// apiextensions-apiserver stores it (spec.conversion). failures are recent messages, newest last;
// those that quote `conversion webhook for GROUP/VERSION, Kind=KIND failed` for its group and
// kind count (webhook_converter.go, Convert).
func ConversionBackend(crd *unstructured.Unstructured, services Services, failures []string) Backend {
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	if strategy != "Webhook" {
		return Backend{State: Available, Reason: "it converts without a webhook",
			Evidence: []string{fmt.Sprintf("CustomResourceDefinition %s: conversion strategy %s", crd.GetName(), orNone(strategy))}}
	}
	var cc admissionregistrationv1.WebhookClientConfig
	if raw, ok, _ := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cc) // same fields as apiextensions/v1's
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	mark := regexp.MustCompile(`conversion webhook for ` + regexp.QuoteMeta(group) + `/[^,\s]+, Kind=` + regexp.QuoteMeta(kind) + `\b`)
	var quoted []string
	for _, f := range failures {
		if mark.MatchString(f) {
			quoted = append(quoted, f)
		}
	}
	head := fmt.Sprintf("CustomResourceDefinition %s: conversion webhook, calls %s", crd.GetName(), describeTarget(cc))
	return judge(head, cc, services, quoted)
}

// APIServiceBackend judges the Service behind an aggregated APIService
// (apiregistration.k8s.io/v1 spec.service), with its Available condition counted as a recent
// failure when it is False. failures are recent messages, newest last; those that name its
// group/version count.
func APIServiceBackend(apiService *unstructured.Unstructured, services Services, failures []string) Backend {
	raw, ok, _ := unstructured.NestedMap(apiService.Object, "spec", "service")
	if !ok {
		return Backend{State: Available, Reason: "kube-apiserver serves it itself",
			Evidence: []string{fmt.Sprintf("APIService %s: Local", apiService.GetName())}}
	}
	var ref admissionregistrationv1.ServiceReference // the same fields as apiregistration/v1's
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ref)
	cc := admissionregistrationv1.WebhookClientConfig{Service: &ref}
	group, _, _ := unstructured.NestedString(apiService.Object, "spec", "group")
	version, _, _ := unstructured.NestedString(apiService.Object, "spec", "version")
	var quoted []string
	for _, f := range failures {
		if NamesGroupVersion(f, group+"/"+version) {
			quoted = append(quoted, f)
		}
	}
	if status, reason, message := condition(apiService, "Available"); status == string(corev1.ConditionFalse) {
		quoted = append(quoted, fmt.Sprintf("Available=False (%s): %s", reason, message))
	}
	head := fmt.Sprintf("APIService %s: calls %s", apiService.GetName(), describeTarget(cc))
	return judge(head, cc, services, quoted)
}

// judge decides from the Service the backend calls and the recent failures: a Service that
// cannot answer first (the cause), then failures (a certificate, a timeout), then the Service.
func judge(head string, cc admissionregistrationv1.WebhookClientConfig, services Services, failures []string) Backend {
	b := Backend{State: Unknown, Evidence: []string{head}}
	if ref := cc.Service; ref != nil {
		var svc *snapshot.BackendService
		if services != nil {
			svc = services.BackendService(ref.Namespace, ref.Name)
		}
		var lines []string
		b.State, b.Reason, lines = serviceState(ref, svc)
		b.Evidence = append(b.Evidence, lines...)
	} else {
		b.Reason = "it calls " + urlHost(cc.URL) + ", outside what the scan reads"
	}
	if len(failures) > maxQuoted {
		failures = failures[len(failures)-maxQuoted:]
	}
	for _, f := range failures {
		b.Evidence = append(b.Evidence, "recent failure: "+clip(f))
	}
	if b.State != Unavailable && len(failures) > 0 {
		b.State, b.Reason = Unavailable, failureReason(failures[len(failures)-1])
	}
	return b
}

// serviceState judges a Service as the apiserver's resolvers use it (k8s.io/apiserver
// pkg/util/proxy: ResolveCluster by default, ResolveEndpoint with --enable-aggregator-routing):
// the Service must exist and have the port called; its ready endpoints on that port's name are
// what answers (RandomEndpoint: an endpoint whose ready condition is not false).
func serviceState(ref *admissionregistrationv1.ServiceReference, read *snapshot.BackendService) (State, string, []string) {
	name := "Service " + ref.Namespace + "/" + ref.Name
	if read == nil {
		return Unknown, name + " was not read", []string{name + ": not read"}
	}
	svc := read.Service
	if svc == nil {
		return Unavailable, name + " does not exist", []string{name + ": not found"}
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return Unknown, fmt.Sprintf("%s points outside the cluster (ExternalName %s)", name, svc.Spec.ExternalName),
			[]string{fmt.Sprintf("%s: ExternalName %s", name, svc.Spec.ExternalName)}
	}
	port := servicePort(ref)
	var sp *corev1.ServicePort
	var ports []string
	for i := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprint(svc.Spec.Ports[i].Port))
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return Unavailable, fmt.Sprintf("%s has no port %d", name, port),
			[]string{fmt.Sprintf("%s: no port %d (ports: %s)", name, port, orNone(strings.Join(ports, ", ")))}
	}
	ready, total, terminating := endpoints(read, sp.Name)
	line := fmt.Sprintf("%s port %d", name, port)
	if sp.Name != "" {
		line += " (" + sp.Name + ")"
	}
	line += fmt.Sprintf(": %d/%d endpoints ready", ready, total)
	if terminating > 0 {
		line += fmt.Sprintf(", %d terminating still serving", terminating)
	}
	if len(read.EndpointSlices) == 0 {
		line += " (no EndpointSlice)"
	}
	lines := []string{line}
	switch {
	case ready == 0 && terminating > 0:
		return Unknown, fmt.Sprintf("%s has no ready endpoint; %d terminating ones still serve until they stop", name, terminating), lines
	case ready == 0:
		return Unavailable, name + " has no ready endpoint", lines
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return Unknown, name + " is headless: the apiserver reaches it only when it runs with --enable-aggregator-routing",
			append(lines, name+": clusterIP None")
	}
	return Available, fmt.Sprintf("%s has %d ready endpoint(s)", name, ready), lines
}

// endpoints counts the endpoints of the slices' ports named portName: all, ready (a ready
// condition that is not false), and those terminating that still serve (kube-proxy sends to
// them when none is ready).
func endpoints(read *snapshot.BackendService, portName string) (ready, total, terminating int) {
	for _, es := range read.EndpointSlices {
		has := false
		for _, p := range es.Ports {
			has = has || (p.Name != nil && *p.Name == portName && p.Port != nil)
		}
		if !has {
			continue
		}
		for _, ep := range es.Endpoints {
			total++
			c := ep.Conditions
			switch {
			case c.Ready == nil || *c.Ready:
				ready++
			case c.Serving != nil && *c.Serving && c.Terminating != nil && *c.Terminating:
				terminating++
			}
		}
	}
	return ready, total, terminating
}

// servicePort is the port called: 443 unless set (SetDefaults_ServiceReference).
func servicePort(ref *admissionregistrationv1.ServiceReference) int32 {
	if ref.Port == nil {
		return 443
	}
	return *ref.Port
}

// describeTarget names what a client config calls: `Service ns/name port 443` or a URL's host.
func describeTarget(cc admissionregistrationv1.WebhookClientConfig) string {
	if ref := cc.Service; ref != nil {
		return fmt.Sprintf("Service %s/%s port %d", ref.Namespace, ref.Name, servicePort(ref))
	}
	return "URL " + urlHost(cc.URL)
}

// urlHost is the scheme and host of a URL: its path and query are not evidence.
func urlHost(u *string) string {
	if u == nil {
		return "no URL"
	}
	p, err := url.Parse(*u)
	if err != nil || p.Host == "" {
		return "an unparsable URL"
	}
	return p.Scheme + "://" + p.Host
}

var (
	serviceNotFound = regexp.MustCompile(`service "([^"]+)" not found`)
	x509Clause      = regexp.MustCompile(`x509: [^;"(]*[^;"( ]`)
)

// failureReason words why a call failed, from the error the apiserver quoted.
func failureReason(msg string) string {
	switch {
	case x509Clause.MatchString(msg):
		return "calls fail on its certificate: " + x509Clause.FindString(msg)
	case serviceNotFound.MatchString(msg):
		return "calls fail: its Service " + serviceNotFound.FindStringSubmatch(msg)[1] + " was not found"
	case strings.Contains(msg, "no endpoints available"):
		return "calls fail: its Service has no ready endpoint"
	case strings.Contains(msg, "connection refused"):
		return "calls fail: nothing listens behind it (connection refused)"
	case strings.Contains(msg, "no route to host"):
		return "calls fail: no route to it"
	case strings.Contains(msg, "context deadline exceeded"), strings.Contains(msg, "Client.Timeout"), strings.Contains(msg, "i/o timeout"):
		return "calls time out"
	}
	return "calls fail: " + clip(msg)
}

// condition returns a condition of an unstructured object's status.
func condition(u *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		status, _ = m["status"].(string)
		reason, _ = m["reason"].(string)
		message, _ = m["message"].(string)
		return status, reason, message
	}
	return "", "", ""
}

// clip keeps a quote to one line of quoteLen bytes at most.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > quoteLen {
		return s[:quoteLen] + "..."
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
