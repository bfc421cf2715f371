package terminating

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// namespaceFinalizer is the spec.finalizers entry the namespace controller removes through /finalize.
const namespaceFinalizer = corev1.FinalizerKubernetes

// groupVersionRe finds group/version pairs ("metrics.k8s.io/v1beta1") in a discovery error.
var groupVersionRe = regexp.MustCompile(`\b([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+)/(v[0-9]+[a-z0-9]*)\b`)

// remainingRe and finalizersRe read the namespace controller's condition messages:
// "widgets.example.com has 1 resource instances", "example.com/protect in 1 resource instances".
var (
	remainingRe  = regexp.MustCompile(`([^\s,:]+) has (\d+) resource instances`)
	finalizersRe = regexp.MustCompile(`([^\s,:]+) in (\d+) resource instances`)
)

func namespaceCondition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		c := &ns.Status.Conditions[i]
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func (a *pass) conditionLine(c *corev1.NamespaceCondition) string {
	return fmt.Sprintf("condition %s=%s (%s) since %s (%s ago): %s", c.Type, c.Status, c.Reason,
		c.LastTransitionTime.UTC().Format(time.RFC3339), checks.Age(a.now, c.LastTransitionTime.Time), oneLine(c.Message, 300))
}

// namespaceRules diagnose a namespace being deleted, root causes most specific first.
var namespaceRules = []checks.Rule[*pass, *target]{
	(*pass).namespaceConversion,
	(*pass).namespaceDiscovery,
	(*pass).namespaceContent,
	(*pass).readdRace,
	(*pass).finalizerOwners,
	(*pass).namespaceControllerIdle,
}

// namespace diagnoses a namespace being deleted.
func (a *pass) namespace(ns *corev1.Namespace) (report.Finding, bool) {
	since, due := a.overdue(ns)
	if !due {
		return report.Finding{}, false
	}
	subj := subject{ref: checks.Ref("v1", "Namespace", ns), kind: "Namespace", meta: ns, noun: "Terminating"}
	f, ok := checks.Diagnose(namespaceRules, a, &target{subject: subj, owners: newOwnerCache(a, subj), since: since, ns: ns})
	if !ok {
		return report.Finding{}, false
	}
	if len(ns.Spec.Finalizers) > 0 {
		var fs []string
		for _, x := range ns.Spec.Finalizers {
			fs = append(fs, string(x))
		}
		f.Evidence = append(f.Evidence, "spec.finalizers ["+strings.Join(fs, ", ")+"]")
	}
	return a.finish(subj, since, f, ""), true
}

// namespaceDiscovery reports a namespace whose deletion waits on failing API discovery.
func (a *pass) namespaceDiscovery(t *target) (checks.Draft, bool) {
	ns := t.ns
	c := namespaceCondition(ns, corev1.NamespaceDeletionDiscoveryFailure)
	if c == nil {
		return checks.Draft{}, false
	}
	ev := []string{a.conditionLine(c)}
	gvs := map[string]bool{}
	var gvList []string
	for _, m := range groupVersionRe.FindAllStringSubmatch(c.Message, -1) {
		gv := m[1] + "/" + m[5]
		if !gvs[gv] {
			gvs[gv] = true
			gvList = append(gvList, gv)
		}
	}
	sort.Strings(gvList)
	if len(gvList) > 0 {
		ev = append(ev, "failing group versions named by the condition: "+strings.Join(gvList, ", "))
	}
	var blamed []string
	var blocked []report.BlockRef
	condQuote := "recent failure: " + strings.Join(strings.Fields(c.Message), " ")
	if a.read(snapshot.InputAPIServices) {
		for _, svc := range a.s.APIServices {
			// The condition counts as a failure of the group/versions it names (APIServiceBackend).
			b := admission.APIServiceBackend(svc, a.s, []string{c.Message})
			if b.State != admission.Unavailable {
				continue
			}
			group, _, _ := unstructured.NestedString(svc.Object, "spec", "group")
			version, _, _ := unstructured.NestedString(svc.Object, "spec", "version")
			for _, line := range b.Evidence {
				// The condition, quoted above already, is left out.
				if !strings.HasPrefix(condQuote, strings.TrimSuffix(line, "...")) {
					ev = append(ev, line)
				}
			}
			verdict := fmt.Sprintf("APIService %s: unavailable, %s", svc.GetName(), b.Reason)
			if gvs[group+"/"+version] {
				verdict += "; its group/version " + group + "/" + version + " is named by the condition"
			}
			ev = append(ev, verdict)
			held := a.namespacesWithout(group + "/" + version)
			ev = append(ev, checks.Evidencef("%d Terminating namespace(s) in scope whose discovery fails on %s/%s: %s", len(held), group, version, strings.Join(firstN(held, 5), ", ")))
			blamed = append(blamed, fmt.Sprintf("APIService %s (%s)", svc.GetName(), b.Reason))
			blocked = append(blocked, report.BlockRef{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: svc.GetName()})
		}
		if len(blamed) == 0 {
			ev = append(ev, "every APIService is Available now: the namespace controller retries and should finish soon")
		}
	} else {
		ev = append(ev, "APIServices were not read (apiregistration.k8s.io)")
	}
	who := strings.Join(gvList, ", ")
	if len(blamed) > 0 {
		who = strings.Join(blamed, ", ")
	}
	if who == "" {
		who = "an aggregated API"
	}
	return checks.Draft{
		RootCause: RootCauseNamespaceDiscoveryFailed,
		Summary:   fmt.Sprintf("Terminating for %s: API discovery fails for %s", checks.Age(a.now, ns.DeletionTimestamp.Time), who),
		Message: fmt.Sprintf("The namespace controller must list every API group to prove the namespace is empty, and "+
			"discovery fails for %s, so it keeps the kubernetes finalizer. An unavailable APIService blocks the deletion "+
			"of every namespace in the cluster: restore the Service behind it (and the pods behind that), or delete the "+
			"APIService if that API is gone for good. Emptying the namespace's spec.finalizers would leave its content behind.", who),
		Evidence:  ev,
		BlockedBy: blocked,
	}, true
}

// namespacesWithout are the namespaces being deleted whose discovery failure names gv, by name.
func (a *pass) namespacesWithout(gv string) []string {
	var out []string
	for _, ns := range a.s.Namespaces {
		if c := namespaceCondition(ns, corev1.NamespaceDeletionDiscoveryFailure); ns.DeletionTimestamp != nil && c != nil &&
			admission.NamesGroupVersion(c.Message, gv) {
			out = append(out, ns.Name)
		}
	}
	sort.Strings(out)
	return out
}

// namespaceContent reports a namespace whose content is not deleted yet, naming what remains.
func (a *pass) namespaceContent(t *target) (checks.Draft, bool) {
	ns := t.ns
	content := namespaceCondition(ns, corev1.NamespaceContentRemaining)
	fins := namespaceCondition(ns, corev1.NamespaceFinalizersRemaining)
	failed := namespaceCondition(ns, corev1.NamespaceDeletionContentFailure)
	gv := namespaceCondition(ns, corev1.NamespaceDeletionGVParsingFailure)
	if content == nil && fins == nil && failed == nil && gv == nil {
		return checks.Draft{}, false
	}
	var ev, kinds, finalizers []string
	for _, c := range []*corev1.NamespaceCondition{content, fins, failed, gv} {
		if c != nil {
			ev = append(ev, a.conditionLine(c))
		}
	}
	if content != nil {
		for _, m := range remainingRe.FindAllStringSubmatch(content.Message, -1) {
			kinds = append(kinds, fmt.Sprintf("%s (%s)", strings.TrimSuffix(m[1], "."), m[2]))
		}
	}
	if fins != nil {
		for _, m := range finalizersRe.FindAllStringSubmatch(fins.Message, -1) {
			finalizers = append(finalizers, fmt.Sprintf("%s (%s)", m[1], m[2]))
		}
	}
	if len(kinds) > 0 {
		ev = append(ev, "remaining: "+strings.Join(kinds, ", "))
	}
	if len(finalizers) > 0 {
		ev = append(ev, "held by finalizers: "+strings.Join(finalizers, ", "))
	}
	// The stuck objects themselves, as the objects input saw them; each has its own finding.
	var objs []string
	for _, o := range a.s.Objects {
		if o.Meta == nil || o.Meta.Namespace != ns.Name || o.Meta.DeletionTimestamp == nil {
			continue
		}
		objs = append(objs, fmt.Sprintf("%s %s [%s]", o.Kind, o.Meta.Name, strings.Join(o.Meta.Finalizers, ", ")))
	}
	terminatingPods := 0
	for _, p := range a.s.Pods {
		if p.Namespace == ns.Name && p.DeletionTimestamp != nil {
			terminatingPods++
		}
	}
	sort.Strings(objs)
	if len(objs) > 5 {
		objs = append(objs[:5], fmt.Sprintf("and %d more", len(objs)-5))
	}
	if len(objs) > 0 {
		ev = append(ev, "objects being deleted in the namespace: "+strings.Join(objs, "; "))
	}
	if terminatingPods > 0 {
		ev = append(ev, fmt.Sprintf("%d pod(s) Terminating in the namespace", terminatingPods))
	}
	what := strings.Join(kinds, ", ")
	if what == "" {
		what = "some content"
	}
	msg := fmt.Sprintf("The namespace controller deleted what it could, but %s remains", what)
	if len(finalizers) > 0 {
		msg += ", held by finalizers " + strings.Join(finalizers, ", ")
	}
	msg += ". The namespace goes away once that content does; the stuck objects' own findings say who must remove their finalizers."
	if failed != nil {
		msg += " Some deletions failed outright (NamespaceDeletionContentFailure)."
	}
	return checks.Draft{
		RootCause: RootCauseNamespaceContentRemaining,
		Summary:   fmt.Sprintf("Terminating for %s: %s remains", checks.Age(a.now, ns.DeletionTimestamp.Time), what),
		Message:   msg,
		Evidence:  ev,
		BlockedBy: a.reportable(ns.Name),
	}, true
}

// reportable returns what the check could report in a namespace (its pods being deleted or
// PreparingDelete, its objects being deleted), by name: the content a Terminating namespace
// waits on. Which of them is stuck is for their own findings to say; the first by name with one
// keeps reports stable.
func (a *pass) reportable(namespace string) []report.BlockRef {
	var out []report.BlockRef
	for _, p := range a.pods() {
		if p.Namespace == namespace {
			out = append(out, blockRef(podSubject(p).ref))
		}
	}
	for _, o := range a.s.Objects {
		if o.Meta != nil && o.Meta.Namespace == namespace && o.Meta.DeletionTimestamp != nil && !ownInput(o) {
			out = append(out, blockRef(checks.Ref(o.APIVersion(), o.Kind, o.Meta)))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// namespaceControllerIdle reports a namespace whose kubernetes finalizer is still there and
// about which the namespace controller wrote no condition: it is not running or not reaching it.
func (a *pass) namespaceControllerIdle(t *target) (checks.Draft, bool) {
	ns := t.ns
	has := false
	for _, f := range ns.Spec.Finalizers {
		if f == namespaceFinalizer {
			has = true
		}
	}
	if !has {
		return checks.Draft{}, false
	}
	return checks.Draft{
		RootCause: RootCauseFinalizerOwnerNotActing,
		Summary:   fmt.Sprintf("Terminating for %s: the namespace controller has not finalized it", checks.Age(a.now, ns.DeletionTimestamp.Time)),
		Message: "spec.finalizers still holds kubernetes, which the namespace controller in kube-controller-manager removes " +
			"once the namespace is empty, and it has written no deletion condition: check that kube-controller-manager " +
			"runs with the namespace controller.",
		Evidence: []string{"finalizer kubernetes: owner namespace controller (kube-controller-manager), known-finalizer table; no NamespaceDeletion* or *Remaining condition is set"},
	}, true
}
