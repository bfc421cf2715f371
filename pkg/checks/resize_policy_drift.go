package checks

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Check and root-cause IDs of resize-policy-drift (contract.md).
const (
	CheckResizePolicyDrift     = "resize-policy-drift"
	rcKruiseDropsResizePolicy  = "kruise-drops-resize-policy"
	rcResizePolicyImmutable    = "resize-policy-immutable"
	rcSidecarResizePolicyDrift = "sidecar-resize-policy-drift"
	rcBenignDefaulting         = "benign-defaulting"
)

// Texts kruise and the apiserver write that the check recognizes.
const (
	rpEventFailedInPlace = "FailedUpdatePodInPlace"
	// rpForbiddenUpdate is the apiserver's message when a pod update changes an immutable field.
	rpForbiddenUpdate = "pod updates may not change fields other than"
	// rpFailedPrefix and rpFailedSuffix frame the pod's name in a FailedUpdatePodInPlace message.
	rpFailedPrefix = "failed to update pod "
	rpFailedSuffix = " in-place"
	// rpReasonStartInPlace is the InPlaceUpdateReady=False reason kruise sets before it updates a pod.
	rpReasonStartInPlace = "StartInPlaceUpdate"
	// rpMaxQuote bounds an event message quoted in evidence.
	rpMaxQuote = 240
)

// rpSampleWindow is how far apart in creation the pods of one group may be for one of them to
// stand for all: a rollout or scale-up creates its pods within minutes, while an apiserver
// upgrade or a new admission webhook between two creations is a matter of days.
const rpSampleWindow = time.Hour

// rpGate is the Kubernetes feature gate that adds containers[].resizePolicy.
const rpGate = "InPlacePodVerticalScaling"

type resizePolicyDrift struct{}

// ResizePolicyDrift returns the resize-policy-drift check.
func ResizePolicyDrift() Check { return resizePolicyDrift{} }

func (resizePolicyDrift) Info() Info {
	return Info{
		ID:    CheckResizePolicyDrift,
		Title: "resizePolicy drift between pods and their in-place workload",
		Description: "For OpenKruise workloads that update pods in place (CloneSet InPlaceIfPossible/InPlaceOnly, " +
			"Advanced StatefulSet podUpdatePolicy InPlaceIfPossible/InPlaceOnly, Advanced DaemonSet InPlaceIfPossible), " +
			"compares every owned pod's containers[].resizePolicy with the workload template (and, for injected sidecars, " +
			"with the SidecarSet), container by container and resource by resource. An unset entry equals NotRequired, " +
			"the value the kubelet applies and that v1.27-v1.32 apiservers write on pods with InPlacePodVerticalScaling on; " +
			"the order of entries does not matter. Pods one workload created from one revision with the same sidecars are " +
			"alike, so of each such group the oldest pod (and the newest, when they were created more than an hour apart) is " +
			"read in full, and the whole group when it differs in any way; pods updated in place or named by a failed " +
			"in-place update are always read.",
		Threshold: 5 * time.Minute,
		RootCauses: []RootCause{
			{
				ID: rcKruiseDropsResizePolicy, Title: "kruise-manager older than v1.7.0 drops resizePolicy", Severity: report.SeverityError,
				Description: "kruise-manager before v1.7.0 is built against Kubernetes API 0.26, which has no containers[].resizePolicy. " +
					"Its in-place update sends the whole pod back without the field, and the apiserver rejects the update " +
					"(`pod updates may not change fields other than ...`): the pod never reaches the new revision and kruise " +
					"records FailedUpdatePodInPlace events, leaving InPlaceUpdateReady=False. A v1.27-v1.32 apiserver with " +
					"InPlacePodVerticalScaling re-defaults NotRequired for cpu/memory on containers with requests, so only " +
					"policies that differ from that default are rejected there; from v1.33 every pod carrying resizePolicy is. " +
					"Evicting the pod lets the workload recreate it on the new revision (kruise < v1.7.0 creates pods without " +
					"resizePolicy); upgrade kruise to >= v1.7.0 so later in-place updates keep the field.",
				References: []string{"openkruise/kruise#1683", "openkruise/kruise#1598"},
				Actions:    []string{ActionEvictPod},
			},
			{
				ID: rcResizePolicyImmutable, Title: "the template's resizePolicy cannot reach the pod in place", Severity: report.SeverityWarning,
				Description: "The workload template asks for a different resizePolicy than the pod has. A pod update may not change " +
					"containers[].resizePolicy (immutable from v1.33; v1.27-v1.32 also reject it as a change to a field other than " +
					"the image), so no in-place update will give the pod the template's policy: it keeps resizing its containers " +
					"the old way. Evicting the pod lets the workload recreate it with the template's policy.",
				References: []string{"kubernetes/kubernetes#128920"},
				Actions:    []string{ActionEvictPod},
			},
			{
				ID: rcSidecarResizePolicyDrift, Title: "an injected sidecar's resizePolicy differs from its SidecarSet", Severity: report.SeverityWarning,
				Description: "A container injected by a SidecarSet (env IS_INJECTED=true, or named in the pod annotation " +
					"kruise.io/sidecarset-injected-list) has a different resizePolicy than the SidecarSet now declares. Neither the " +
					"workload's nor the SidecarSet's in-place update can change resizePolicy on an existing pod; a recreated pod " +
					"is injected with the SidecarSet's current containers.",
				References: []string{"openkruise/kruise#1683"},
				Actions:    []string{ActionEvictPod},
			},
			{
				ID: rcBenignDefaulting, Title: "resizePolicy defaulted by the apiserver (harmless)", Severity: report.SeverityInfo,
				Description: "With InPlacePodVerticalScaling on, v1.27-v1.32 apiservers add resizePolicy NotRequired for cpu and " +
					"memory to pod containers that request them, but not to workload templates, so pods and template look " +
					"different while they mean the same. kruise >= v1.7.0 keeps the field on in-place updates, and these " +
					"apiservers re-default what an older kruise drops, so in-place updates work. Nothing to fix; note that " +
					"from v1.33 the apiserver no longer re-defaults, so kruise must be >= v1.7.0 before the apiserver is upgraded.",
				References: []string{"kubernetes/kubernetes#128920"},
			},
		},
		Needs: []Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationInPlaceState, kruise.AnnotationSidecarHash, kruise.AnnotationSidecarInjects}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputSidecarSets, Optional: true},
		},
	}
}

// PodCandidates returns the pods of in-place workloads worth reading in full. The pods one
// workload created from one revision, with the same sidecars injected, have the same containers
// except for what the apiserver and admission webhooks did when each was created, so the oldest
// and the newest of such a group stand for it (the oldest alone when all were created within
// rpSampleWindow, through the same apiserver). Once they have been read (the collector asks
// again), a group whose samples differ from the template in any way is read whole. Pods updated
// in place (created from a revision their labels no longer name) and pods a failed in-place
// update names are always read.
func (resizePolicyDrift) PodCandidates(s *snapshot.Snapshot) []types.UID {
	env := rpNewEnv(s, nil)
	var out []types.UID
	for _, w := range rpInPlaceWorkloads(s) {
		failed := rpFailedPods(s, w)
		type groupKey struct{ revision, sidecarHash, injected string }
		groups := map[groupKey][]*metav1.ObjectMeta{}
		var keys []groupKey
		for _, p := range rpOwnedPods(s, w) {
			if failed[p.Name] || p.Annotations[kruise.AnnotationInPlaceState] != "" {
				out = append(out, p.UID)
				continue
			}
			k := groupKey{p.Labels[rpRevisionLabel], p.Annotations[kruise.AnnotationSidecarHash], p.Annotations[kruise.AnnotationSidecarInjects]}
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], p)
		}
		for _, k := range keys {
			g := groups[k]
			oldest, newest := g[0], g[0]
			for _, p := range g[1:] {
				if p.CreationTimestamp.Before(&oldest.CreationTimestamp) {
					oldest = p
				}
				if newest.CreationTimestamp.Before(&p.CreationTimestamp) {
					newest = p
				}
			}
			if env.sampleDiffers(w, oldest) || env.sampleDiffers(w, newest) {
				for _, p := range g {
					out = append(out, p.UID)
				}
				continue
			}
			out = append(out, oldest.UID)
			if newest.CreationTimestamp.Sub(oldest.CreationTimestamp.Time) > rpSampleWindow {
				out = append(out, newest.UID)
			}
		}
	}
	return out
}

// sampleDiffers reports whether a sample pod, once read in full, shows anything the check could
// report on its group: a policy that differs or is defaulted, a sidecar whose SidecarSet is
// missing, or a policy an old kruise-manager would drop.
func (e *rpEnv) sampleDiffers(w *kruise.Workload, meta *metav1.ObjectMeta) bool {
	pod, full := e.s.FullPod(meta.UID)
	if !full {
		return false
	}
	p := rpComparePod(e.s, w, pod)
	if len(p.missingSidecarSets) > 0 || (e.mgrOld && len(p.carriesPolicy()) > 0) {
		return true
	}
	for _, c := range p.containers {
		if len(c.differs) > 0 || len(c.defaulted) > 0 {
			return true
		}
	}
	return false
}

// rpFailedPods returns the names of the workload's pods that a FailedUpdatePodInPlace event names.
func rpFailedPods(s *snapshot.Snapshot, w *kruise.Workload) map[string]bool {
	out := map[string]bool{}
	for _, ev := range s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID) {
		if ev.Reason != rpEventFailedInPlace {
			continue
		}
		if rest, ok := strings.CutPrefix(ev.Message, rpFailedPrefix); ok {
			if name, _, ok := strings.Cut(rest, rpFailedSuffix); ok {
				out[name] = true
			}
		}
	}
	return out
}

func rpInPlaceWorkloads(s *snapshot.Snapshot) []*kruise.Workload {
	var out []*kruise.Workload
	for _, w := range s.Workloads {
		if w.InPlace() {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// rpOwnedPods returns the pods whose controller is w and whose labels match w's selector. A
// selector that cannot be parsed does not filter: the controller reference decides.
func rpOwnedPods(s *snapshot.Snapshot, w *kruise.Workload) []*metav1.ObjectMeta {
	var sel labels.Selector
	if w.Selector != nil {
		if parsed, err := metav1.LabelSelectorAsSelector(w.Selector); err == nil {
			sel = parsed
		}
	}
	var out []*metav1.ObjectMeta
	for _, p := range s.PodsOwnedBy(w.UID) {
		ref := snapshot.ControllerOf(p)
		if ref == nil || ref.UID != w.UID || p.Namespace != w.Namespace {
			continue
		}
		if sel != nil && !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rpEnv is what the check knows about the cluster, read once per run.
type rpEnv struct {
	s *snapshot.Snapshot
	// server is the apiserver's version from /version; serverErr says why it could not be parsed.
	server    knowledge.Version
	serverErr error
	// defaulting is the apiserver range that defaults resizePolicy on pods (v1.27-v1.32).
	defaulting knowledge.Range
	kr         *kruiseEnv
	mgr        *kruise.Manager
	// mgrOld is true when the manager's version is known and has the drop bug.
	mgrOld bool
	// gate is the InPlacePodVerticalScaling state: "on", "off" or "" (unknown), and why.
	gate, gateWhy string
}

func rpNewEnv(s *snapshot.Snapshot, pods []*rpPod) *rpEnv {
	e := &rpEnv{s: s}
	e.server, e.serverErr = knowledge.ParseVersion(s.ServerVersion)
	if b, ok := knowledge.LookupBug(knowledge.BehaviourResizeDefaulting); ok {
		e.defaulting = b.Affected
	}
	e.kr = newKruiseEnv(s)
	e.mgr = e.kr.mgr
	_, e.mgrOld = e.kr.affected(knowledge.BugKruiseDropsResizePolicy)
	e.gate, e.gateWhy = e.inferGate(pods)
	return e
}

// serverDefaults reports whether the apiserver's version is one that defaults resizePolicy on
// pods when the gate is on.
func (e *rpEnv) serverDefaults() bool {
	return e.serverErr == nil && e.defaulting.From != "" && e.defaulting.Contains(e.server)
}

// serverHasField reports whether pods on this apiserver can carry resizePolicy at all.
func (e *rpEnv) serverHasField() bool {
	if e.serverErr != nil || e.defaulting.From == "" {
		return false
	}
	from, err := knowledge.ParseVersion(e.defaulting.From)
	return err == nil && e.server.AtLeast(from)
}

// inferGate infers InPlacePodVerticalScaling from what the pods show; the apiserver's flags are
// not readable. From v1.33 the gate is on by default.
func (e *rpEnv) inferGate(pods []*rpPod) (string, string) {
	if e.serverErr != nil {
		return "", ""
	}
	if !e.serverHasField() {
		return "off", fmt.Sprintf("%s: apiserver %s predates the gate (alpha in %s)", rpGate, e.s.ServerVersion, e.defaulting.From)
	}
	if !e.serverDefaults() {
		return "on", fmt.Sprintf("%s: on by default from v1.33 (beta, GA in v1.35) on apiserver %s; inferred from the version, the apiserver's flags are not read",
			rpGate, e.s.ServerVersion)
	}
	for _, p := range pods {
		for _, c := range p.containers {
			if len(c.podList) > 0 {
				return "on", fmt.Sprintf("%s inferred on for apiserver %s: pod %s container %s carries resizePolicy, which an apiserver with the gate off drops",
					rpGate, e.s.ServerVersion, p.pod.Name, c.name)
			}
		}
	}
	for _, p := range pods {
		for _, c := range p.containers {
			if r := rpRequested(c.spec); len(r) > 0 && !c.init {
				return "off", fmt.Sprintf("%s inferred off for apiserver %s: pod %s container %s requests %s but has no resizePolicy, which the apiserver adds when the gate is on",
					rpGate, e.s.ServerVersion, p.pod.Name, c.name, rpJoinResources(r))
			}
		}
	}
	return "", ""
}

// rpPolicy is a resizePolicy as resource -> restart policy: the order of entries does not matter.
type rpPolicy map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy

func rpPolicyOf(list []corev1.ContainerResizePolicy) rpPolicy {
	p := rpPolicy{}
	for _, e := range list {
		p[e.ResourceName] = e.RestartPolicy
	}
	return p
}

// effective is the policy that applies to a resource: an unset entry means NotRequired.
func (p rpPolicy) effective(r corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	if v, ok := p[r]; ok && v != "" {
		return v
	}
	return corev1.NotRequired
}

func (p rpPolicy) String() string {
	if len(p) == 0 {
		return "unset"
	}
	keys := make([]string, 0, len(p))
	for r := range p {
		keys = append(keys, string(r))
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+string(p[corev1.ResourceName(k)]))
	}
	return strings.Join(parts, ",")
}

// rpContainer is one pod container compared with what it was created from.
type rpContainer struct {
	name string
	init bool
	spec corev1.Container
	// podList is the pod's resizePolicy as stored (order kept: the apiserver compares lists).
	podList []corev1.ContainerResizePolicy
	pod     rpPolicy
	// ref is the template's (or SidecarSet's) policy; hasRef is false when nothing declares the container.
	ref    rpPolicy
	hasRef bool
	// refSource names where ref comes from: "template" or "SidecarSet NAME".
	refSource string
	// sidecarSets are the SidecarSets that injected the container, when it is a sidecar.
	sidecarSets []string
	injected    bool
	// differs are resources whose effective policies differ.
	differs []corev1.ResourceName
	// defaulted are resources the pod sets to NotRequired where the reference leaves them unset:
	// what a v1.27-v1.32 apiserver writes.
	defaulted []corev1.ResourceName
}

// rpPod is one candidate pod's comparison.
type rpPod struct {
	w          *kruise.Workload
	pod        *corev1.Pod
	containers []*rpContainer
	// missingSidecarSets are injected containers whose SidecarSet is not in the snapshot.
	missingSidecarSets []string
}

func (p *rpPod) carriesPolicy() []*rpContainer {
	var out []*rpContainer
	for _, c := range p.containers {
		if len(c.podList) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (p *rpPod) differing(sidecar bool) []*rpContainer {
	var out []*rpContainer
	for _, c := range p.containers {
		if len(c.differs) > 0 && c.injected == sidecar {
			out = append(out, c)
		}
	}
	return out
}

func (p *rpPod) defaultedOnly() []*rpContainer {
	var out []*rpContainer
	for _, c := range p.containers {
		if len(c.differs) > 0 {
			return nil
		}
		if len(c.defaulted) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (resizePolicyDrift) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	var pods []*rpPod
	for _, w := range rpInPlaceWorkloads(s) {
		for _, meta := range rpOwnedPods(s, w) {
			pod, full := s.FullPod(meta.UID)
			if !full {
				continue
			}
			pods = append(pods, rpComparePod(s, w, pod))
		}
	}
	env := rpNewEnv(s, pods)
	info := resizePolicyDrift{}.Info()
	var out []report.Finding
	for _, p := range pods {
		f, ok := env.diagnose(p)
		if !ok || s.Now.Sub(f.Since) < threshold {
			continue
		}
		out = append(out, NewFinding(info, f))
	}
	return out
}

// rpComparePod compares each container of the pod with the workload template, or, for injected
// sidecars, with the SidecarSet that declares it.
func rpComparePod(s *snapshot.Snapshot, w *kruise.Workload, pod *corev1.Pod) *rpPod {
	p := &rpPod{w: w, pod: pod}
	injectedList := rpSplitList(pod.Annotations[kruise.AnnotationSidecarInjects])
	lists := []struct {
		init     bool
		pod, tpl []corev1.Container
	}{
		{false, pod.Spec.Containers, w.Template.Spec.Containers},
		{true, pod.Spec.InitContainers, w.Template.Spec.InitContainers},
	}
	for _, l := range lists {
		for _, c := range l.pod {
			cr := &rpContainer{name: c.Name, init: l.init, spec: c, podList: c.ResizePolicy, pod: rpPolicyOf(c.ResizePolicy)}
			_, inTemplate := rpFindContainer(l.tpl, c.Name)
			marked := rpIsInjected(c)
			var sets []string
			if marked || len(injectedList) > 0 {
				sets = rpSidecarSetsOf(s, c.Name, l.init, injectedList)
			}
			// A listed SidecarSet with a container of the same name does not make a template
			// container a sidecar: only the env marker or a container the template lacks does.
			cr.injected = marked || (len(sets) > 0 && !inTemplate)
			switch {
			case cr.injected:
				cr.sidecarSets = sets
				if ref, name, ok := rpSidecarContainer(s, c.Name, l.init, sets); ok {
					cr.ref, cr.hasRef, cr.refSource = rpPolicyOf(ref.ResizePolicy), true, "SidecarSet "+name
				} else {
					p.missingSidecarSets = append(p.missingSidecarSets, c.Name)
				}
			default:
				if ref, ok := rpFindContainer(l.tpl, c.Name); ok {
					cr.ref, cr.hasRef, cr.refSource = rpPolicyOf(ref.ResizePolicy), true, "template"
				}
			}
			if cr.hasRef {
				cr.differs, cr.defaulted = rpDiffPolicies(cr.pod, cr.ref)
			}
			p.containers = append(p.containers, cr)
		}
	}
	return p
}

// rpDiffPolicies compares two policies resource by resource. differs are the resources whose
// effective policies differ; defaulted those the pod sets to NotRequired for cpu or memory while
// the reference leaves them unset (equal in meaning, different in writing).
func rpDiffPolicies(pod, ref rpPolicy) (differs, defaulted []corev1.ResourceName) {
	seen := map[corev1.ResourceName]bool{}
	var all []corev1.ResourceName
	for _, p := range []rpPolicy{pod, ref} {
		for r := range p {
			if !seen[r] {
				seen[r] = true
				all = append(all, r)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, r := range all {
		if pod.effective(r) != ref.effective(r) {
			differs = append(differs, r)
			continue
		}
		_, inPod := pod[r]
		_, inRef := ref[r]
		if inPod && !inRef && (r == corev1.ResourceCPU || r == corev1.ResourceMemory) {
			defaulted = append(defaulted, r)
		}
	}
	return differs, defaulted
}

func rpFindContainer(cs []corev1.Container, name string) (corev1.Container, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// rpIsInjected reports the env marker kruise's SidecarSet webhook sets on injected containers. Only
// the marker's presence is read: env values are never shown.
func rpIsInjected(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == kruise.EnvSidecarInjected && strings.EqualFold(e.Value, "true") {
			return true
		}
	}
	return false
}

// rpSidecarSetsOf returns the SidecarSets that declare a container of this name: those listed in
// the pod's injected-list annotation when it is set, else any SidecarSet in the snapshot.
func rpSidecarSetsOf(s *snapshot.Snapshot, name string, init bool, injected []string) []string {
	listed := map[string]bool{}
	for _, n := range injected {
		listed[n] = true
	}
	var out []string
	for _, ss := range s.SidecarSets {
		if len(injected) > 0 && !listed[ss.Name] {
			continue
		}
		if _, ok := rpFindContainer(rpSidecarContainers(ss, init), name); ok {
			out = append(out, ss.Name)
		}
	}
	sort.Strings(out)
	return out
}

// rpSidecarContainers returns the SidecarSet's containers of that kind; the snapshot keeps only
// spec.containers, so injected init containers are matched by the env marker alone.
func rpSidecarContainers(ss *kruise.SidecarSet, init bool) []corev1.Container {
	if init {
		return nil
	}
	return ss.Containers
}

func rpSidecarContainer(s *snapshot.Snapshot, name string, init bool, sets []string) (corev1.Container, string, bool) {
	for _, n := range sets {
		for _, ss := range s.SidecarSets {
			if ss.Name != n {
				continue
			}
			if c, ok := rpFindContainer(rpSidecarContainers(ss, init), name); ok {
				return c, ss.Name, true
			}
		}
	}
	return corev1.Container{}, "", false
}

func rpSplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// rpRequested returns cpu and memory when the container requests them (a limit without a
// request counts: the apiserver copies limits to requests on pods).
func rpRequested(c corev1.Container) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		_, req := c.Resources.Requests[r]
		_, lim := c.Resources.Limits[r]
		if req || lim {
			out = append(out, r)
		}
	}
	return out
}

// rpRedefaulted is the resizePolicy a v1.27-v1.32 apiserver with the gate on writes for a
// container that has none: NotRequired for cpu, then memory, when requested. Observed on v1.32.2:
// a pod update without resizePolicy gets exactly this list back.
func rpRedefaulted(c corev1.Container) []corev1.ContainerResizePolicy {
	var out []corev1.ContainerResizePolicy
	for _, r := range rpRequested(c) {
		out = append(out, corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.NotRequired})
	}
	return out
}

func rpSameList(a, b []corev1.ContainerResizePolicy) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dropRejected returns the containers whose resizePolicy a pod update without the field would
// change on this apiserver (so the update is rejected), and how that was inferred.
func (e *rpEnv) dropRejected(p *rpPod) ([]*rpContainer, string) {
	carrying := p.carriesPolicy()
	if len(carrying) == 0 || e.serverErr != nil {
		return nil, ""
	}
	if !e.serverDefaults() {
		return carrying, fmt.Sprintf("inferred: apiserver %s does not default resizePolicy, so an update without the field changes every container that carries it", e.s.ServerVersion)
	}
	if e.gate != "on" {
		return nil, ""
	}
	var out []*rpContainer
	for _, c := range carrying {
		if c.init || !rpSameList(c.podList, rpRedefaulted(c.spec)) {
			out = append(out, c)
		}
	}
	return out, fmt.Sprintf("inferred: apiserver %s re-defaults only NotRequired for requested cpu, then memory, so an update without the field changes these containers' lists",
		e.s.ServerVersion)
}

// rpRejection is a FailedUpdatePodInPlace event of the workload about this pod.
type rpRejection struct {
	event     *corev1.Event
	forbidden bool
	// resize is true when the apiserver's quoted diff touches ResizePolicy.
	resize bool
}

func rpRejections(s *snapshot.Snapshot, w *kruise.Workload, pod *corev1.Pod) []rpRejection {
	prefix := rpFailedPrefix + pod.Name + rpFailedSuffix
	var out []rpRejection
	for _, ev := range s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID) {
		if ev.Reason != rpEventFailedInPlace || !strings.HasPrefix(ev.Message, prefix) {
			continue
		}
		out = append(out, rpRejection{
			event:     ev,
			forbidden: strings.Contains(ev.Message, rpForbiddenUpdate),
			resize:    strings.Contains(ev.Message, "ResizePolicy"),
		})
	}
	return out
}

// rpQuoteEvent keeps the first line of an event message, cut after the apiserver's reason: the
// diff that follows can show env values and is not quoted.
func rpQuoteEvent(msg string) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, rpForbiddenUpdate); i >= 0 {
		msg = msg[:i+len(rpForbiddenUpdate)] + " ..."
	}
	if len(msg) > rpMaxQuote {
		msg = msg[:rpMaxQuote] + " ..."
	}
	return msg
}

func (e *rpEnv) diagnose(p *rpPod) (Draft, bool) {
	base := Draft{
		Object: Ref("v1", "Pod", p.pod),
		Owner:  rpWorkloadRef(p.w),
		Node:   p.pod.Spec.NodeName,
		Since:  p.pod.CreationTimestamp.Time,
	}
	rejections := rpRejections(e.s, p.w, p.pod)
	if e.mgrOld {
		rejected, how := e.dropRejected(p)
		var seen []rpRejection
		if rpUpdatePending(p) {
			for _, r := range rejections {
				if r.forbidden && r.resize {
					seen = append(seen, r)
				}
			}
		}
		if len(rejected) > 0 || len(seen) > 0 {
			return e.kruiseDrops(base, p, rejected, how, seen, rejections), true
		}
	}
	if cs := p.differing(true); len(cs) > 0 {
		return e.sidecarDrift(base, p, cs), true
	}
	if cs := p.differing(false); len(cs) > 0 && e.gate == "on" {
		return e.immutable(base, p, cs), true
	}
	if cs := p.defaultedOnly(); len(cs) > 0 && e.serverDefaults() {
		return e.benign(base, p, cs), true
	}
	return Draft{}, false
}

// rpUpdatePending reports whether the pod still waits for an update: it is on an older revision,
// or kruise's InPlaceUpdateReady condition is False. A rejection event about a pod that has
// since been updated is stale.
func rpUpdatePending(p *rpPod) bool {
	rev, upd := p.pod.Labels[rpRevisionLabel], p.w.Status.UpdateRevision
	if rev != "" && upd != "" && rev != upd {
		return true
	}
	line, _ := rpInPlaceCondition(p.pod)
	return line != ""
}

func rpWorkloadRef(w *kruise.Workload) *report.ObjectRef {
	ref := krWorkloadRef(w)
	return &ref
}

func rpKindName(w *kruise.Workload) string { return strings.ToLower(w.Kind) + "/" + w.Name }

func (e *rpEnv) managerLine() string {
	line := e.kr.managerEvidence()
	if e.mgrOld {
		if b, ok := knowledge.LookupBug(knowledge.BugKruiseDropsResizePolicy); ok {
			line += fmt.Sprintf(": versions %s are built against a Kubernetes API without resizePolicy", b.Affected)
		}
	}
	return line
}

func (e *rpEnv) serverLine() string {
	if e.serverErr != nil {
		return fmt.Sprintf("apiserver version %q from /version could not be parsed: %v", e.s.ServerVersion, e.serverErr)
	}
	switch {
	case e.serverDefaults():
		return fmt.Sprintf("apiserver %s (from /version) defaults resizePolicy on pods when %s is on (%s)", e.s.ServerVersion, rpGate, e.defaulting)
	case e.serverHasField():
		return fmt.Sprintf("apiserver %s (from /version) does not default resizePolicy; a pod update may not change it", e.s.ServerVersion)
	}
	return fmt.Sprintf("apiserver %s (from /version)", e.s.ServerVersion)
}

func (e *rpEnv) common(p *rpPod) []string {
	ev := []string{e.serverLine()}
	if e.gateWhy != "" {
		ev = append(ev, e.gateWhy)
	}
	ev = append(ev, e.managerLine())
	ev = append(ev, rpRevisionLines(p)...)
	for _, name := range p.missingSidecarSets {
		line := fmt.Sprintf("container %s is an injected sidecar whose SidecarSet is not in the snapshot: not compared", name)
		if err, ok := e.s.Unread[snapshot.InputSidecarSets]; ok {
			line += fmt.Sprintf(" (%v)", err)
		}
		ev = append(ev, line)
	}
	return ev
}

// rpRevisionLines say which revision the pod is on. ControllerRevisions are not read, so a pod
// on an older revision is compared with the workload's current template, and evidence says so.
func rpRevisionLines(p *rpPod) []string {
	rev := p.pod.Labels[rpRevisionLabel]
	upd := p.w.Status.UpdateRevision
	var out []string
	switch {
	case rev != "" && upd != "" && rev != upd:
		out = append(out, fmt.Sprintf("pod is on revision %s, %s updateRevision is %s: compared with the current template (older revisions are not read)",
			rev, rpKindName(p.w), upd))
	case rev != "" && upd != "":
		out = append(out, fmt.Sprintf("pod is on %s updateRevision %s", rpKindName(p.w), upd))
	}
	if raw, ok := p.pod.Annotations[kruise.AnnotationInPlaceState]; ok {
		var st struct {
			Revision string `json:"revision"`
		}
		if json.Unmarshal([]byte(raw), &st) == nil && st.Revision != "" {
			out = append(out, fmt.Sprintf("annotation %s: last in-place update written for revision %s", kruise.AnnotationInPlaceState, st.Revision))
		}
	}
	return out
}

// rpRevisionLabel is the label every kruise workload puts on its pods (apps/v1 ControllerRevisionHashLabelKey).
const rpRevisionLabel = "controller-revision-hash"

func rpContainerLine(c *rpContainer) string {
	kind := "container"
	if c.init {
		kind = "init container"
	}
	ref := "not declared"
	if c.hasRef {
		ref = c.ref.String()
	}
	line := fmt.Sprintf("%s %s: pod resizePolicy %s; %s %s", kind, c.name, c.pod, c.refSource, ref)
	if !c.hasRef {
		line = fmt.Sprintf("%s %s: pod resizePolicy %s", kind, c.name, c.pod)
	}
	if len(c.differs) > 0 {
		line += " (differs for " + rpJoinResources(c.differs) + ")"
	}
	if c.injected {
		if len(c.sidecarSets) > 0 {
			line += "; injected by SidecarSet " + strings.Join(c.sidecarSets, ",")
		} else {
			line += fmt.Sprintf("; injected (env %s), its SidecarSet is not in the snapshot", kruise.EnvSidecarInjected)
		}
	}
	return line
}

func rpJoinResources(rs []corev1.ResourceName) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = string(r)
	}
	return strings.Join(parts, ",")
}

func rpInPlaceCondition(pod *corev1.Pod) (string, time.Time) {
	for _, c := range pod.Status.Conditions {
		if string(c.Type) == kruise.ConditionInPlaceReady && c.Status == corev1.ConditionFalse {
			line := fmt.Sprintf("pod condition %s=False", kruise.ConditionInPlaceReady)
			if c.Reason != "" {
				line += " (reason " + c.Reason + ")"
			}
			if !c.LastTransitionTime.IsZero() {
				line += " since " + c.LastTransitionTime.UTC().Format(time.RFC3339)
			}
			if c.Reason == rpReasonStartInPlace {
				line += ": an in-place update started and never completed"
			}
			return line, c.LastTransitionTime.Time
		}
	}
	return "", time.Time{}
}

func rpEvictFix(p *rpPod, note string) report.Fix {
	desc := fmt.Sprintf("Evict pod %s/%s through the Eviction API (PodDisruptionBudgets respected); %s %s recreates it from its current template",
		p.pod.Namespace, p.pod.Name, p.w.Kind, p.w.Name)
	if note != "" {
		desc += "; " + note
	}
	return report.Fix{Action: ActionEvictPod, Description: desc, Risk: report.RiskMedium, Params: map[string]string{}}
}

func (e *rpEnv) kruiseDrops(f Draft, p *rpPod, rejected []*rpContainer, how string, seen, all []rpRejection) Draft {
	f.RootCause = rcKruiseDropsResizePolicy
	f.Summary = fmt.Sprintf("kruise-manager %s drops resizePolicy: in-place updates of this pod are rejected", e.mgr.Version)
	f.Message = fmt.Sprintf("kruise-manager %s has no resizePolicy in its Kubernetes API; its in-place update sends pod %s without the field "+
		"and the apiserver rejects the change. Upgrade kruise to >= v1.7.0; evicting the pod lets %s recreate it on the new revision.",
		e.mgr.Version, p.pod.Name, rpKindName(p.w))
	f.Evidence = e.common(p)
	for _, c := range p.carriesPolicy() {
		f.Evidence = append(f.Evidence, rpContainerLine(c))
	}
	if len(rejected) > 0 {
		names := make([]string, len(rejected))
		for i, c := range rejected {
			names[i] = c.name
		}
		f.Evidence = append(f.Evidence, how+": "+strings.Join(names, ","))
	}
	since := time.Time{}
	for _, r := range all {
		line := fmt.Sprintf("event %s on %s", r.event.Reason, rpKindName(p.w))
		if r.event.Count > 1 {
			line += fmt.Sprintf(" (x%d)", r.event.Count)
		}
		line += fmt.Sprintf(" at %s: %q", snapshot.EventTime(r.event).UTC().Format(time.RFC3339), rpQuoteEvent(r.event.Message))
		if r.resize {
			line += "; the apiserver's diff changes ResizePolicy"
		}
		f.Evidence = append(f.Evidence, line)
		if t := rpEventFirst(r.event); !t.IsZero() && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	// kruise also records the error as the workload's FailedUpdate condition.
	if c, ok := p.w.Condition("FailedUpdate"); ok && c.Status == string(corev1.ConditionTrue) && strings.Contains(c.Message, `"`+p.pod.Name+`"`) {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s condition FailedUpdate: %q", rpKindName(p.w), rpQuoteEvent(c.Message)))
	}
	if len(seen) == 0 && len(all) == 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("no %s event about this pod in the snapshot: the rejection is inferred, not observed", rpEventFailedInPlace))
	}
	if line, t := rpInPlaceCondition(p.pod); line != "" {
		f.Evidence = append(f.Evidence, line)
		if !t.IsZero() && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	if !since.IsZero() {
		f.Since = since
	}
	f.Fixes = []report.Fix{rpEvictFix(p, "kruise < v1.7.0 creates the new pod without resizePolicy; upgrade kruise to >= v1.7.0")}
	return f
}

func rpEventFirst(ev *corev1.Event) time.Time {
	if !ev.FirstTimestamp.IsZero() {
		return ev.FirstTimestamp.Time
	}
	return snapshot.EventTime(ev)
}

// recreateHelps says whether a recreated pod would get the declared policy: kruise < v1.7.0
// creates and injects pods through an API without resizePolicy, so it would not.
func (e *rpEnv) recreateHelps() bool { return !e.mgrOld }

func (e *rpEnv) sidecarDrift(f Draft, p *rpPod, cs []*rpContainer) Draft {
	var sets []string
	for _, c := range cs {
		sets = append(sets, c.sidecarSets...)
	}
	sets = rpUniq(sets)
	f.RootCause = rcSidecarResizePolicyDrift
	f.Summary = fmt.Sprintf("sidecar %s resizePolicy differs from SidecarSet %s", cs[0].name, strings.Join(sets, ","))
	f.Message = fmt.Sprintf("Container %s was injected by SidecarSet %s, which now declares a different resizePolicy; the pod cannot take it in place.",
		cs[0].name, strings.Join(sets, ","))
	f.Evidence = e.common(p)
	for _, c := range cs {
		f.Evidence = append(f.Evidence, rpContainerLine(c))
	}
	if e.recreateHelps() {
		f.Fixes = []report.Fix{rpEvictFix(p, "the new pod is injected with the SidecarSet's current containers")}
	} else {
		f.Evidence = append(f.Evidence, "kruise-manager < v1.7.0 injects sidecars without resizePolicy: a recreated pod would not get it either; upgrade kruise to >= v1.7.0")
	}
	return f
}

func (e *rpEnv) immutable(f Draft, p *rpPod, cs []*rpContainer) Draft {
	f.RootCause = rcResizePolicyImmutable
	f.Summary = fmt.Sprintf("container %s resizePolicy differs from the template and cannot change in place", cs[0].name)
	f.Message = fmt.Sprintf("The %s template declares a different resizePolicy than pod %s has; a pod update may not change resizePolicy, so the pod keeps its own until it is recreated.",
		rpKindName(p.w), p.pod.Name)
	f.Evidence = e.common(p)
	for _, c := range cs {
		f.Evidence = append(f.Evidence, rpContainerLine(c))
	}
	if e.recreateHelps() {
		f.Fixes = []report.Fix{rpEvictFix(p, "the new pod gets the template's resizePolicy")}
	} else {
		f.Evidence = append(f.Evidence, "kruise-manager < v1.7.0 creates pods without resizePolicy: a recreated pod would not get the template's either; upgrade kruise to >= v1.7.0")
	}
	return f
}

func (e *rpEnv) benign(f Draft, p *rpPod, cs []*rpContainer) Draft {
	f.RootCause = rcBenignDefaulting
	f.Summary = "resizePolicy on the pod was defaulted by the apiserver; it means the same as the template"
	f.Message = fmt.Sprintf("Apiserver %s added resizePolicy NotRequired to pod %s where the %s template sets none; NotRequired is also what an unset entry means, so nothing differs in effect.",
		e.s.ServerVersion, p.pod.Name, rpKindName(p.w))
	f.Evidence = e.common(p)
	for _, c := range cs {
		f.Evidence = append(f.Evidence, rpContainerLine(c)+"; defaulted "+rpJoinResources(c.defaulted)+"=NotRequired")
	}
	switch {
	case !e.kr.versionKnown():
		f.Evidence = append(f.Evidence, "kruise-manager version unknown: this apiserver re-defaults the same values on every pod update, so in-place updates pass either way")
	case e.mgrOld:
		f.Evidence = append(f.Evidence, fmt.Sprintf("kruise-manager %s drops resizePolicy on in-place updates, but this apiserver re-defaults the same list, so they pass; upgrade kruise to >= v1.7.0 before the apiserver to >= v1.33, which no longer re-defaults",
			e.mgr.Version))
	default:
		f.Evidence = append(f.Evidence, fmt.Sprintf("kruise-manager %s keeps resizePolicy on in-place updates (>= v1.7.0)", e.mgr.Version))
	}
	return f
}

func rpUniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
