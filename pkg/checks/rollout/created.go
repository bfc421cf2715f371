package rollout

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/webhookenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// refusal is what the scan read of the creates a rollout short of pods attempted.
type refusal struct {
	// lines are the evidence; message is the newest refusal still in effect ("" if none) and
	// by what refused it.
	lines   []string
	message string
	by      refuser
	// hook is the webhook the refusal names, as the scan read and judged it; nil when it names
	// none or none was read.
	hook *webhookenv.Judged
}

// refusedCreates looks, for a rollout with fewer live pods on its update revision than it must
// update, at the creates the apiserver refused. A Deployment's ReplicaSet copies the refusal
// into the Deployment's ReplicaFailure condition, which lasts as long as the refusals do
// (getReplicaFailures, pkg/controller/deployment/sync.go, kubernetes v1.37.1). Every controller
// also records each as a Warning FailedCreate event on the object that creates the pods (the
// ReplicaSet, the StatefulSet, the DaemonSet, the OpenKruise workload: createPods,
// pkg/controller/cloneset/sync/cloneset_scale.go, kruise v1.9.0) and retries on its next sync.
// Only events seen since the workload's newest pod was created count: a refusal a later create
// got past is not what holds the rollout now, and one still in effect is recorded again on each
// retry.
func refusedCreates(s *snapshot.Snapshot, r *rollout) refusal {
	var have int32
	for _, p := range r.pods {
		if r.onUpdate(p.Labels) && p.DeletionTimestamp == nil {
			have++
		}
	}
	var out refusal
	if c := r.core; c != nil && c.replicaFailure != nil {
		out.message = c.replicaFailure.Message
		out.lines = append(out.lines, checks.Evidencef("condition ReplicaFailure=True reason %s since %s ago: %s", c.replicaFailure.Reason,
			checks.Age(s.Now, c.replicaFailure.LastTransitionTime.Time), checks.Truncate(c.replicaFailure.Message, 300)))
	}
	if have >= r.target && out.message == "" {
		return refusal{}
	}
	since := r.meta.CreationTimestamp.Time
	for _, p := range r.owned {
		if p.CreationTimestamp.After(since) {
			since = p.CreationTimestamp.Time
		}
	}
	var newest *corev1.Event
	for _, e := range r.failedCreates(s) {
		if !snapshot.EventTime(e).Before(since) && (newest == nil || snapshot.EventTime(e).After(snapshot.EventTime(newest))) {
			newest = e
		}
	}
	// A DaemonSet's revision is known from its pods only.
	exists := "no pod of the new revision exists"
	if r.update != "" {
		exists = fmt.Sprintf("no pod of revision %s exists", r.update)
	}
	if have > 0 {
		exists = fmt.Sprintf("%d of the %d pods to update exist on revision %s", have, r.target, r.update)
	}
	err, unread := s.Unread[snapshot.InputEvents]
	switch {
	case newest != nil:
		out.lines = append(out.lines, checks.Evidencef("%s; the newest create the apiserver refused: %s", exists, kruiseenv.EventLine(s.Now, newest)))
		if out.message == "" {
			out.message = kruiseenv.EventMessage(newest.Message)
		}
	case out.message != "":
		// The condition says it already.
	case have > 0:
		// Some pods were created: nothing says the others were refused rather than not yet due.
	case unread:
		out.lines = append(out.lines, checks.Evidencef("%s; the controller records a create the apiserver refuses as a FailedCreate event on the %s, "+
			"and the events could not be read: %v", exists, r.creatorKind(), err))
	default:
		out.lines = append(out.lines, checks.Evidencef("%s, and no FailedCreate event on the %s was read since %s ago (events last the apiserver's "+
			"--event-ttl, 1h by default)", exists, r.creatorKind(), checks.Age(s.Now, since)))
	}
	if out.message != "" {
		out.by = refuserOf(out.message)
		if line := out.by.line(); line != "" {
			out.lines = append(out.lines, line)
		}
	}
	return out
}

// onUpdate reports whether a pod with these labels is on the update revision. A Deployment's
// pods are those of its new ReplicaSet already.
func (r *rollout) onUpdate(l map[string]string) bool {
	if r.core != nil && r.core.dep != nil {
		return true
	}
	return l[revisionLabel] == r.update
}

// creatorKind names what the refused creates are recorded on.
func (r *rollout) creatorKind() string {
	if len(r.creators) == 0 {
		return "ReplicaSet"
	}
	return r.creators[0].kind
}

// refuser is what refused a pod create, read from the apiserver's message.
type refuser struct {
	// kind is ResourceQuota, LimitRange, PodSecurity, AdmissionWebhook or
	// ValidatingAdmissionPolicy; "" when the message names none of them.
	kind, name string
	// detail is what the refuser says in the terms a person acts on.
	detail string
	// callFailed: the apiserver could not call the webhook (rather than the webhook denying).
	callFailed bool
}

// The messages of the admission plugins that refuse pods (kubernetes v1.37.1):
// plugin/pkg/admission/resourcequota (CheckRequest: "exceeded quota: NAME, requested: ..., used:
// ..., limited: ..." and "failed quota: NAME: must specify ..."), plugin/pkg/admission/limitranger
// ("maximum cpu usage per Container is ..."), staging/src/k8s.io/pod-security-admission
// ("violates PodSecurity \"LEVEL:VERSION\": ..."), the webhook dispatchers (admission webhook
// "NAME" denied the request / failed calling webhook "NAME") and the validating admission policy
// ("ValidatingAdmissionPolicy 'NAME' with binding 'BINDING' denied request: ...").
var (
	quotaExceeded = regexp.MustCompile(`exceeded quota: ([^,]+), requested: ([^\s,]+(?:,[^\s,]+)*), used: ([^\s,]+(?:,[^\s,]+)*), limited: ([^\s,]+(?:,[^\s,]+)*)`)
	quotaFailed   = regexp.MustCompile(`failed quota: ([^:]+): (.*)`)
	limitRange    = regexp.MustCompile(`((?:maximum|minimum) \S+ usage per (?:Container|Pod) is [^,\]]+(?:, but (?:limit|request) is [^,\]]+)?|\S+ max limit to request ratio per (?:Container|Pod) is [^,\]]+)`)
	podSecurity   = regexp.MustCompile(`violates PodSecurity "([^"]+)": (.*)`)
	webhookDenied = regexp.MustCompile(`admission webhook "([^"]+)" denied the request:? ?(.*)`)
	webhookFailed = regexp.MustCompile(`failed calling webhook "([^"]+)": (.*)`)
	policyDenied  = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: (.*)`)
)

// refuserOf names what refused the create the message quotes.
func refuserOf(msg string) refuser {
	if m := quotaExceeded.FindStringSubmatch(msg); m != nil {
		return refuser{kind: "ResourceQuota", name: m[1], detail: quotaDetail(m[2], m[3], m[4])}
	}
	if m := quotaFailed.FindStringSubmatch(msg); m != nil {
		return refuser{kind: "ResourceQuota", name: m[1], detail: checks.Truncate(m[2], 200)}
	}
	if m := podSecurity.FindStringSubmatch(msg); m != nil {
		return refuser{kind: "PodSecurity", name: m[1], detail: checks.Truncate(m[2], 200)}
	}
	if m := webhookDenied.FindStringSubmatch(msg); m != nil {
		return refuser{kind: "AdmissionWebhook", name: m[1], detail: "denied the request: " + checks.Truncate(m[2], 200)}
	}
	if m := webhookFailed.FindStringSubmatch(msg); m != nil {
		return refuser{kind: "AdmissionWebhook", name: m[1], detail: "could not be called: " + checks.Truncate(m[2], 200), callFailed: true}
	}
	if m := policyDenied.FindStringSubmatch(msg); m != nil {
		return refuser{kind: "ValidatingAdmissionPolicy", name: m[1], detail: fmt.Sprintf("binding %s denied the request: %s", m[2], checks.Truncate(m[3], 200))}
	}
	if ms := limitRange.FindAllString(msg, 3); ms != nil {
		return refuser{kind: "LimitRange", detail: strings.Join(ms, "; ")}
	}
	return refuser{}
}

// quotaDetail pairs each resource the quota refused with what was requested, used and allowed:
// "requests.cpu: requested 500m, used 1, hard 1".
func quotaDetail(requested, used, hard string) string {
	req, u, h := quotaValues(requested), quotaValues(used), quotaValues(hard)
	var out []string
	for _, kv := range strings.Split(hard, ",") {
		name, _, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			continue
		}
		out = append(out, fmt.Sprintf("%s: requested %s, used %s, hard %s", name, req[name], u[name], h[name]))
	}
	if len(out) == 0 {
		return fmt.Sprintf("requested %s, used %s, limited %s", requested, used, hard)
	}
	return strings.Join(out, "; ")
}

func quotaValues(list string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(list, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			out[k] = v
		}
	}
	return out
}

// line is the evidence naming the refuser; "" when the message names none.
func (r refuser) line() string {
	switch r.kind {
	case "":
		return ""
	case "LimitRange":
		return checks.Evidencef("refused by a LimitRange of the namespace: %s", r.detail)
	case "PodSecurity":
		return checks.Evidencef("refused by Pod Security admission, level %s: %s", r.name, r.detail)
	}
	return checks.Evidencef("refused by %s %s: %s", r.kind, r.name, r.detail)
}

// remedy is what a person does about the refuser.
func (r refuser) remedy() string {
	switch r.kind {
	case "ResourceQuota":
		return fmt.Sprintf("ResourceQuota %s has no room for them (%s): raise it or free what it counts", r.name, r.detail)
	case "LimitRange":
		return "a LimitRange of the namespace rejects their resources: change the template's resources or the LimitRange"
	case "PodSecurity":
		return fmt.Sprintf("Pod Security admission (%s) rejects the template: make the template meet the level or change the namespace's level", r.name)
	case "AdmissionWebhook":
		if !r.callFailed {
			return fmt.Sprintf("admission webhook %s %s: make the template meet its policy, or change the policy", r.name, r.detail)
		}
		return fmt.Sprintf("admission webhook %s %s", r.name, r.detail)
	case "ValidatingAdmissionPolicy":
		return fmt.Sprintf("ValidatingAdmissionPolicy %s %s", r.name, r.detail)
	}
	return "remove what refuses them (a ResourceQuota to raise or free, an admission webhook or policy the template breaks)"
}
