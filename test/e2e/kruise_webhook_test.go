package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// webhookBlocksPodWrites: OpenKruise's pod webhooks as v1.8 installs them (mpod.kb.io on pod
// creates in kruise-mutating-webhook-configuration, vpod.kb.io on pod updates and deletes in
// kruise-validating-webhook-configuration, failurePolicy Fail, calling kruise-webhook-service in
// the manager's namespace; config/webhook/manifests.yaml and patch_manifests.yaml), with that
// Service gone while the leader runs. The real apiserver rejects what the manager would write: the
// create of a CloneSet's pod (recorded as kruise's FailedCreate event, createPods in
// pkg/controller/cloneset/sync/cloneset_scale.go) and the patch that moves a pod out of
// PreparingNormal. Both findings name the webhook. The webhooks also select the test's namespaces
// by name, so the other scenarios on this cluster are not held; a namespace labelled
// control-plane, which kruise's selector skips, is not held and its pod gets its usual verdict.
func (k *krEnv) webhookBlocksPodWrites(t *testing.T) {
	const ns, skipped, kruiseNS = "wh-kruise", "wh-kruise-cp", "kruise-v190"
	k.namespace(t, ns)
	if _, err := k.cs.CoreV1().Namespaces().Create(k.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: skipped,
		Labels: map[string]string{"control-plane": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What exists before the webhooks: a PreparingNormal pod whose hook is satisfied in each
	// namespace, and a CloneSet whose two pods are still to be created.
	var held []*corev1.Pod
	for _, n := range []string{ns, skipped} {
		cs := k.steadyCloneSet(t, n, "web", krHookBoth(), "")
		pod := k.clonePod(t, cs, "t4k8w", "PreparingNormal", krDeadNode)
		k.hookActs(t, pod, []string{krFinalizer}, map[string]string{krReadyLabel: "true"})
		held = append(held, pod)
	}
	api := k.writeStatus(t, k.cloneSet(t, ns, "api", 2, nil, ""), 0, "api-5d4f8b7c9", 0)

	selected := checktest.NamespaceSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "control-plane", Operator: metav1.LabelSelectorOpDoesNotExist},
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{ns, skipped}}}})
	hook := func(name, ops, path string) admissionregistrationv1.ValidatingWebhook {
		h := checktest.Webhook(name, kruiseNS, "kruise-webhook-service", checktest.Rules(ops, "", "v1", "pods"), selected)
		h.ClientConfig.Service.Path = &path
		return h
	}
	mutating := checktest.MutatingWebhooks("kruise-mutating-webhook-configuration", hook("mpod.kb.io", "CREATE", "/mutate-pod"))
	validating := checktest.ValidatingWebhooks("kruise-validating-webhook-configuration", hook("vpod.kb.io", "UPDATE,DELETE", "/validate-pod"))
	mutating.UID, validating.UID = "", ""
	adm := k.cs.AdmissionregistrationV1()
	if _, err := adm.MutatingWebhookConfigurations().Create(k.ctx, mutating, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Create(k.ctx, validating, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = adm.MutatingWebhookConfigurations().Delete(context.Background(), mutating.Name, metav1.DeleteOptions{})
		_ = adm.ValidatingWebhookConfigurations().Delete(context.Background(), validating.Name, metav1.DeleteOptions{})
	})

	// The manager's create of api's pod, once the apiserver calls mpod.kb.io, and its lifecycle
	// move of the held pods (a merge patch of the state label, PatchPodLifecycle).
	var refused error
	eventually(t, 30*time.Second, "the apiserver to call mpod.kb.io", func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-x7k2p", Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
		_, refused = k.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "kruise-manager"})
		return refused != nil && strings.Contains(refused.Error(), `failed calling webhook "mpod.kb.io"`), nil
	})
	k.event(t, api, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf(`failed to create pod: %v, pod: {"metadata":{"name":"api-x7k2p"},"spec":{"containers":[{"name":"app","env":[{"name":"API_TOKEN","value":"s3cr3t-value"}]}]}}`, refused))
	move := []byte(`{"metadata":{"labels":{"lifecycle.apps.kruise.io/state":"Normal"}}}`)
	for _, pod := range held {
		_, err := k.cs.CoreV1().Pods(pod.Namespace).Patch(k.ctx, pod.Name, types.MergePatchType, move,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "kruise-manager"})
		if blocked := err != nil && strings.Contains(err.Error(), `failed calling webhook "vpod.kb.io"`); blocked != (pod.Namespace == ns) {
			t.Fatalf("the lifecycle move of %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}

	gone := []string{"its backend is unavailable: Service kruise-v190/kruise-webhook-service does not exist", "Service kruise-v190/kruise-webhook-service: not found"}
	blockedBy := func(kind, name string) []report.BlockRef {
		return []report.BlockRef{{APIVersion: "admissionregistration.k8s.io/v1", Kind: kind, Name: name},
			{APIVersion: "v1", Kind: "Service", Namespace: kruiseNS, Name: "kruise-webhook-service"}}
	}
	scanned := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, kruiseNS)...).wantExit(2)
	rep := scanned.agreed()
	if strings.Contains(scanned.stdout, "s3cr3t-value") {
		t.Errorf("the report leaks an environment value from the event's pod dump:\n%s", scanned.stdout)
	}
	for _, tc := range []struct {
		check, name string
		evidence    []string
		blockedBy   []report.BlockRef
	}{
		{"stuck-preparing-normal", "web-t4k8w", append([]string{"ValidatingWebhookConfiguration kruise-validating-webhook-configuration, webhook vpod.kb.io is " +
			"called for the update that moves the pod out of PreparingNormal: rule UPDATE,DELETE core/v1 pods"}, gone...),
			blockedBy("ValidatingWebhookConfiguration", validating.Name)},
		{"expectations-unsatisfied", "api", append([]string{"MutatingWebhookConfiguration kruise-mutating-webhook-configuration, webhook mpod.kb.io is " +
			"called for the creates of its pods: rule CREATE core/v1 pods", `service "kruise-webhook-service" not found`}, gone...),
			blockedBy("MutatingWebhookConfiguration", mutating.Name)},
	} {
		f := krFind(t, rep, tc.check, tc.name)
		assertFinding(t, f, "admission-webhook-unavailable", report.SeverityError, tc.evidence, nil)
		if fmt.Sprint(f.BlockedBy) != fmt.Sprint(tc.blockedBy) {
			t.Errorf("%s blockedBy %+v, want %+v", tc.name, f.BlockedBy, tc.blockedBy)
		}
	}
	rep = pluginOn(k.c.Kubeconfig).scan(t, krArgs(skipped, kruiseNS)...).wantExit(2).agreed()
	f := krFind(t, rep, "stuck-preparing-normal", "web-t4k8w")
	assertFinding(t, f, "prenormal-reconcile-missed", report.SeverityError, nil, []string{"requeue-workload"})
	if all := strings.Join(f.RootCause.Evidence, "\n"); strings.Contains(all, ".kb.io") {
		t.Errorf("the webhook is named in a namespace it skips:\n%s", all)
	}
}
