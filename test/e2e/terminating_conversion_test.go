package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// TestNamespaceConversionWebhook: namespaces whose deletion the real namespace controller
// (kube-controller-manager v1.37.1) cannot finish because a CRD's conversion webhook fails.
//
// Each CRD serves v1beta1 (its storage version) and v1, and the objects are created at
// v1beta1, so etcd holds them at v1beta1. Discovery prefers v1 (the apiextensions-apiserver
// sorts a group's versions kube-aware, customresource_discovery_controller.go,
// sortGroupDiscoveryByKubeAwareVersion), and the namespace controller deletes through the
// preferred version of every resource (namespaced_resources_deleter.go, deleteAllContent with
// the resources of discoverResourcesFn), so its DELETECOLLECTION and LIST need every object
// converted to v1 by the webhook (webhook_converter.go, webhookConverter.Convert). When the call
// fails, deleteAllContentForGroupVersionResource returns the error and makeDeleteContentCondition
// writes it into NamespaceDeletionContentFailure.
//
// Each scenario has a control plane of its own: an object that cannot be converted stops the
// apiserver's watch cache of its resource, and the namespace controller lists every resource in
// every namespace it deletes, so one scenario's failing webhook holds the other's namespace too
// (rightly reported as that webhook's doing, but not what the other scenario asserts).
func TestNamespaceConversionWebhook(t *testing.T) {
	for name, run := range map[string]func(*teEnv, *testing.T){
		"conversion webhook Service missing":  (*teEnv).conversionServiceMissing,
		"conversion webhook up, then stopped": (*teEnv).conversionUpThenStopped,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := testcluster.Start(t, testcluster.Options{ControllerManager: true})
			run(&teEnv{c: c, cs: c.Clientset(), ctx: t.Context()}, t)
		})
	}
}

// conversionServiceMissing: an operator was uninstalled with its Service, and its CRD's
// conversion still points there. The namespace finding names the CRD, the Service and the
// resource type, blockedBy names the CRD, and nothing offers to empty spec.finalizers.
func (e *teEnv) conversionServiceMissing(t *testing.T) {
	const ns = "st-conv-missing"
	gadgets := e.conversionCRD(t, "conv-missing.example.com", "Gadget", "gadgets",
		`service: {namespace: gadget-system, name: gadget-converter, path: /convert, port: 443}`, nil)
	e.namespace(t, ns)
	e.createAt(t, gadgets, "Gadget", ns, "g1", nil)
	if err := e.cs.CoreV1().Namespaces().Delete(e.ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cond := e.waitConversionFailure(t, ns)
	t.Logf("NamespaceDeletionContentFailure: %s", cond.Message)

	rep := e.scan(t, ns, 2)
	f := teFind(t, rep, "Namespace", ns)
	assertFinding(t, f, "conversion-webhook-unavailable", report.SeverityError,
		[]string{"condition NamespaceDeletionContentFailure=True (ContentDeletionFailed)",
			"conversion webhook for conv-missing.example.com/v1beta1, Kind=Gadget failed",
			"gadgets.conv-missing.example.com (Kind Gadget, stored at conv-missing.example.com/v1beta1)",
			"CustomResourceDefinition gadgets.conv-missing.example.com: conversion webhook, calls Service gadget-system/gadget-converter port 443",
			"Service gadget-system/gadget-converter: not found",
			"1 Terminating namespace(s) in scope held behind this conversion webhook: " + ns}, nil)
	if len(f.BlockedBy) != 1 || f.BlockedBy[0].Kind != "CustomResourceDefinition" || f.BlockedBy[0].Name != "gadgets.conv-missing.example.com" {
		t.Errorf("blockedBy %+v, want the CRD", f.BlockedBy)
	}
	if !strings.Contains(f.Summary, "Service gadget-system/gadget-converter does not exist") {
		t.Errorf("summary %q does not say why", f.Summary)
	}
	// why draws the namespace as the root (its finding is the last of the chain) over the CRD it
	// names, which has no finding of its own (pkg/why testdata/namespace-conversion.tree).
	tree := pluginOn(e.c.Kubeconfig).why(t, "ns", ns, "--checks", teCheck, "--min-age", "0s").wantExit(2).stdout
	t.Logf("why ns %s:\n%s", ns, tree)
	for _, want := range []string{"namespace/" + ns + " ", "error ROOT CAUSE conversion-webhook-unavailable [" + f.ID + ", no automatic fix]",
		"└─ customresourcedefinition/gadgets.conv-missing.example.com ", "what the finding above waits on",
		"Fix: none automatic; kubectl workloaddoctor explain conversion-webhook-unavailable"} {
		if !strings.Contains(tree, want) {
			t.Errorf("why ns %s: no %q in\n%s", ns, want, tree)
		}
	}
	// The scan lists gadgets at the preferred version too, v1, which needs the webhook:
	// coverage says so, as a limit that leaves the exit code to the finding (2 above), not as a
	// blind scan (1).
	degraded := false
	for _, n := range rep.Coverage.Degraded {
		degraded = degraded || (n.Check == teCheck && strings.Contains(n.Reason, "conversion webhook failing: list conv-missing.example.com/gadgets"))
	}
	if !degraded || rep.Coverage.Complete {
		t.Errorf("coverage does not name the failing conversion: %+v", rep.Coverage)
	}
}

// conversionUpThenStopped: a conversion webhook the test serves on loopback, up: the namespace
// controller converts and deletes, and the namespace waits only on a finalizer of its object
// (namespace-content-remaining, no conversion finding). Then the webhook stops: the namespace
// controller's next pass fails to convert, and the finding names the webhook, refused.
func (e *teEnv) conversionUpThenStopped(t *testing.T) {
	const ns = "st-conv-up"
	srv := startConverter(t)
	gizmos := e.conversionCRD(t, "conv-up.example.com", "Gizmo", "gizmos",
		fmt.Sprintf("url: %s/convert", srv.url), srv.caPEM)
	e.namespace(t, ns)
	e.createAt(t, gizmos, "Gizmo", ns, "z1", []string{"conv-up.example.com/cleanup"})
	if err := e.cs.CoreV1().Namespaces().Delete(e.ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitNamespaceCondition(t, ns, corev1.NamespaceFinalizersRemaining)
	if srv.calls() == 0 {
		t.Fatal("the namespace controller deleted through v1 without calling the conversion webhook")
	}

	rep := e.scan(t, ns, -1)
	f := teFind(t, rep, "Namespace", ns)
	if f.RootCause.ID != "namespace-content-remaining" {
		t.Errorf("webhook up: root cause %s, want namespace-content-remaining\n%s", f.RootCause.ID, strings.Join(f.RootCause.Evidence, "\n"))
	}

	srv.stop()
	cond := e.waitConversionFailure(t, ns)
	t.Logf("NamespaceDeletionContentFailure: %s", cond.Message)
	rep = e.scan(t, ns, 2)
	f = teFind(t, rep, "Namespace", ns)
	assertFinding(t, f, "conversion-webhook-unavailable", report.SeverityError,
		[]string{"conversion webhook for conv-up.example.com/v1beta1, Kind=Gizmo failed",
			"CustomResourceDefinition gizmos.conv-up.example.com: conversion webhook, calls URL https://127.0.0.1",
			"connection refused"}, nil)
	// Alone on its control plane, the namespace is held by this CRD only.
	want := map[string]bool{"gizmos.conv-up.example.com": true}
	got := map[string]bool{}
	for _, b := range f.BlockedBy {
		got[b.Name] = b.Kind == "CustomResourceDefinition"
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("blockedBy %+v, want the CRDs %v", f.BlockedBy, want)
	}
}

// conversionCRD installs a namespaced CRD serving v1beta1 (stored) and v1, converted by a
// webhook at clientConfig (one YAML line), and returns its v1beta1 resource.
func (e *teEnv) conversionCRD(t *testing.T, group, kind, plural, clientConfig string, caPEM []byte) schema.GroupVersionResource {
	t.Helper()
	if caPEM != nil {
		clientConfig += ", caBundle: " + base64.StdEncoding.EncodeToString(caPEM)
	}
	installCRD(t, e.c, group, kind, plural, fmt.Sprintf(`  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig: {%s}
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, clientConfig))
	return schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: plural}
}

// createAt creates an object at res's version, its storage version: no conversion is called.
func (e *teEnv) createAt(t *testing.T, res schema.GroupVersionResource, kind, ns, name string, finalizers []string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": res.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"size": int64(1)}}}
	obj.SetFinalizers(finalizers)
	if _, err := e.c.Dynamic().Resource(res).Namespace(ns).Create(e.ctx, obj, metav1.CreateOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
}

// waitConversionFailure waits for NamespaceDeletionContentFailure quoting a conversion webhook.
func (e *teEnv) waitConversionFailure(t *testing.T, ns string) corev1.NamespaceCondition {
	t.Helper()
	var got corev1.NamespaceCondition
	eventually(t, 2*time.Minute, "namespace "+ns+" to fail on a conversion webhook", func(ctx context.Context) (bool, error) {
		n, err := e.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionContentFailure && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "conversion webhook for") {
				got = c
				return true, nil
			}
		}
		return false, nil
	})
	return got
}

// converter is a conversion webhook served on loopback over TLS.
type converter struct {
	url   string
	caPEM []byte
	srv   *http.Server
	n     chan struct{}
}

func (c *converter) calls() int { return len(c.n) }

func (c *converter) stop() {
	if err := c.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		panic(err)
	}
}

// startConverter serves ConversionReview v1 as a converter whose versions differ only in
// name: each object comes back with the desired apiVersion.
func startConverter(t *testing.T) *converter {
	t.Helper()
	cert, certPEM := selfSigned(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &converter{url: "https://" + l.Addr().String(), caPEM: certPEM, n: make(chan struct{}, 1<<16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/convert", func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Request    struct {
				UID               string           `json:"uid"`
				DesiredAPIVersion string           `json:"desiredAPIVersion"`
				Objects           []map[string]any `json:"objects"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case c.n <- struct{}{}:
		default:
		}
		for _, o := range review.Request.Objects {
			o["apiVersion"] = review.Request.DesiredAPIVersion
		}
		objects := review.Request.Objects
		if objects == nil {
			objects = []map[string]any{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"apiVersion": review.APIVersion, "kind": review.Kind,
			"response": map[string]any{"uid": review.Request.UID, "convertedObjects": objects,
				"result": map[string]any{"status": "Success"}},
		})
	})
	c.srv = &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = c.srv.ServeTLS(l, "", "") }()
	t.Cleanup(c.stop)
	return c
}

// selfSigned is a serving certificate for 127.0.0.1, its own CA.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "converter"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}
