package resizepolicy

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// policy is a resizePolicy as resource -> restart policy: the order of entries does not matter.
type policy map[corev1.ResourceName]corev1.ResourceResizeRestartPolicy

func policyOf(list []corev1.ContainerResizePolicy) policy {
	p := policy{}
	for _, e := range list {
		p[e.ResourceName] = e.RestartPolicy
	}
	return p
}

// effective is the policy that applies to a resource: an unset entry means NotRequired.
func (p policy) effective(r corev1.ResourceName) corev1.ResourceResizeRestartPolicy {
	if v, ok := p[r]; ok && v != "" {
		return v
	}
	return corev1.NotRequired
}

func (p policy) String() string {
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

// containerDiff is one pod container compared with what it was created from.
type containerDiff struct {
	name string
	init bool
	spec corev1.Container
	// podList is the pod's resizePolicy as stored (order kept: the apiserver compares lists).
	podList []corev1.ContainerResizePolicy
	pod     policy
	// ref is the template's (or SidecarSet's) policy; hasRef is false when nothing declares the container.
	ref    policy
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

// podDiff is one candidate pod's comparison.
type podDiff struct {
	w   *kruise.Workload
	pod *corev1.Pod
	// place is where the pod stands in the rollout; its template is what the pod is compared with.
	place      placement
	containers []*containerDiff
	// missingSidecarSets are injected containers whose SidecarSet is not in the snapshot.
	missingSidecarSets []string
}

func (p *podDiff) carriesPolicy() []*containerDiff {
	var out []*containerDiff
	for _, c := range p.containers {
		if len(c.podList) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (p *podDiff) differing(sidecar bool) []*containerDiff {
	var out []*containerDiff
	for _, c := range p.containers {
		if len(c.differs) > 0 && c.injected == sidecar {
			out = append(out, c)
		}
	}
	return out
}

func (p *podDiff) defaultedOnly() []*containerDiff {
	var out []*containerDiff
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

// comparePod compares each container of the pod with the template of the revision it is judged
// against (pl.template, never nil), or, for injected sidecars, with the SidecarSet that declares it.
func comparePod(s *snapshot.Snapshot, w *kruise.Workload, pod *corev1.Pod, pl placement) *podDiff {
	p := &podDiff{w: w, pod: pod, place: pl}
	tpl := pl.template
	injectedList := splitList(pod.Annotations[kruise.AnnotationSidecarInjects])
	lists := []struct {
		init     bool
		pod, tpl []corev1.Container
	}{
		{false, pod.Spec.Containers, tpl.Spec.Containers},
		{true, pod.Spec.InitContainers, tpl.Spec.InitContainers},
	}
	for _, l := range lists {
		for _, c := range l.pod {
			cr := &containerDiff{name: c.Name, init: l.init, spec: c, podList: c.ResizePolicy, pod: policyOf(c.ResizePolicy)}
			_, inTemplate := findContainer(l.tpl, c.Name)
			marked := isInjected(c)
			var sets []string
			if marked || len(injectedList) > 0 {
				sets = sidecarSetsOf(s, c.Name, l.init, injectedList)
			}
			// A listed SidecarSet with a container of the same name does not make a template
			// container a sidecar: only the env marker or a container the template lacks does.
			cr.injected = marked || (len(sets) > 0 && !inTemplate)
			switch {
			case cr.injected:
				cr.sidecarSets = sets
				if ref, name, ok := sidecarContainer(s, c.Name, l.init, sets); ok {
					cr.ref, cr.hasRef, cr.refSource = policyOf(ref.ResizePolicy), true, "SidecarSet "+name
				} else {
					p.missingSidecarSets = append(p.missingSidecarSets, c.Name)
				}
			default:
				if ref, ok := findContainer(l.tpl, c.Name); ok {
					cr.ref, cr.hasRef, cr.refSource = policyOf(ref.ResizePolicy), true, templateSource(pl)
				}
			}
			if cr.hasRef {
				cr.differs, cr.defaulted = diffPolicies(cr.pod, cr.ref)
			}
			p.containers = append(p.containers, cr)
		}
	}
	return p
}

// templateSource names the template a container is compared with: the workload's own, or an
// older revision's for a pod the partition keeps.
func templateSource(pl placement) string {
	if pl.stand == standKept {
		return "revision " + pl.revision + " template"
	}
	return "template"
}

// diffPolicies compares two policies resource by resource. differs are the resources whose
// effective policies differ; defaulted those the pod sets to NotRequired for cpu or memory while
// the reference leaves them unset (equal in meaning, different in writing).
func diffPolicies(pod, ref policy) (differs, defaulted []corev1.ResourceName) {
	seen := map[corev1.ResourceName]bool{}
	var all []corev1.ResourceName
	for _, p := range []policy{pod, ref} {
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

func findContainer(cs []corev1.Container, name string) (corev1.Container, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// isInjected reports the env marker kruise's SidecarSet webhook sets on injected containers. Only
// the marker's presence is read: env values are never shown.
func isInjected(c corev1.Container) bool {
	for _, e := range c.Env {
		if e.Name == kruise.EnvSidecarInjected && strings.EqualFold(e.Value, "true") {
			return true
		}
	}
	return false
}

// sidecarSetsOf returns the SidecarSets that declare a container of this name: those listed in
// the pod's injected-list annotation when it is set, else any SidecarSet in the snapshot.
func sidecarSetsOf(s *snapshot.Snapshot, name string, init bool, injected []string) []string {
	listed := map[string]bool{}
	for _, n := range injected {
		listed[n] = true
	}
	var out []string
	for _, ss := range s.SidecarSets {
		if len(injected) > 0 && !listed[ss.Name] {
			continue
		}
		if _, ok := findContainer(sidecarContainers(ss, init), name); ok {
			out = append(out, ss.Name)
		}
	}
	sort.Strings(out)
	return out
}

// sidecarContainers returns the SidecarSet's containers of that kind; the snapshot keeps only
// spec.containers, so injected init containers are matched by the env marker alone.
func sidecarContainers(ss *kruise.SidecarSet, init bool) []corev1.Container {
	if init {
		return nil
	}
	return ss.Containers
}

func sidecarContainer(s *snapshot.Snapshot, name string, init bool, sets []string) (corev1.Container, string, bool) {
	for _, n := range sets {
		for _, ss := range s.SidecarSets {
			if ss.Name != n {
				continue
			}
			if c, ok := findContainer(sidecarContainers(ss, init), name); ok {
				return c, ss.Name, true
			}
		}
	}
	return corev1.Container{}, "", false
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// requested returns cpu and memory when the container requests them (a limit without a
// request counts: the apiserver copies limits to requests on pods).
func requested(c corev1.Container) []corev1.ResourceName {
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

// redefaulted is the resizePolicy a v1.27-v1.32 apiserver with the gate on writes for a
// container that has none: NotRequired for cpu, then memory, when requested. Observed on v1.32.2:
// a pod update without resizePolicy gets exactly this list back.
func redefaulted(c corev1.Container) []corev1.ContainerResizePolicy {
	var out []corev1.ContainerResizePolicy
	for _, r := range requested(c) {
		out = append(out, corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.NotRequired})
	}
	return out
}

func sameList(a, b []corev1.ContainerResizePolicy) bool {
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
