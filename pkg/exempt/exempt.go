package exempt

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// The annotations that exempt an object's findings (docs/contract.md, "Third round").
const (
	AnnotationIgnore = "workloaddoctor.io/ignore"
	AnnotationReason = "workloaddoctor.io/ignore-reason"
	AnnotationUntil  = "workloaddoctor.io/ignore-until"
)

// Annotations are the annotations a scan must keep on what it reads metadata-only.
func Annotations() []string { return []string{AnnotationIgnore, AnnotationReason, AnnotationUntil} }

// Warning reasons (report.Warning.Reason).
const (
	// WarnInvalid: an ignore annotation that is not honoured (no reason, unknown IDs, bad date).
	WarnInvalid = "invalid-exemption"
	// WarnExpired: an exemption that would hold a finding back, past its until.
	WarnExpired = "exemption-expired"
	// WarnUnread: an owner or namespace whose annotations the scan did not read.
	WarnUnread = "exemption-holder-not-read"
)

// Roles of a holder: where an annotation sits relative to the finding's object.
const (
	RoleObject    = "object"
	RoleOwner     = "owner"
	RoleNamespace = "namespace"
)

// Holder is an object whose annotations may exempt a finding: its object, the owners up the
// controller chain, its namespace.
type Holder struct {
	Ref  report.ObjectRef
	Role string
	// Read says whether the scan holds the object's metadata; Annotations are meaningless when not.
	Read        bool
	Annotations map[string]string
}

// Subject is a finding with what the scan read about it.
type Subject struct {
	Finding report.Finding
	// Labels are the object's labels; LabelsRead says whether the scan read them.
	Labels     map[string]string
	LabelsRead bool
	// Holders, nearest first: the object, its owners, its namespace.
	Holders []Holder
}

// Policy is what may exempt a finding.
type Policy struct {
	// Rules, when set, are the --exemptions file's.
	Rules *Rules
	// Annotations says whether ignore annotations count (--disallow-annotation-exemptions: not).
	Annotations bool
	IDs         IDs
}

// Result is what Apply decided.
type Result struct {
	Findings   []report.Finding
	Suppressed []report.Suppressed
	Warnings   []report.Warning
}

// Apply sorts findings into those reported and those an exemption holds back, at time now (the
// apiserver's clock, as every age in a scan). An annotation wins over a rule because it is the
// nearer, more specific statement; one that cannot be honoured is a warning, and a rule may still
// hold the finding back.
func (p Policy) Apply(now time.Time, subjects []Subject) Result {
	var res Result
	unread := map[string]report.ObjectRef{}
	warned := map[string]bool{}
	warn := func(w report.Warning) {
		key := w.Reason + "\x00" + w.Message
		if !warned[key] {
			warned[key] = true
			res.Warnings = append(res.Warnings, w)
		}
	}
	for _, s := range subjects {
		if p.Annotations {
			for _, h := range s.Holders {
				if !h.Read {
					unread[h.Ref.String()] = h.Ref
				}
			}
		}
		if sup, ok := p.decide(now, s, warn); ok {
			res.Suppressed = append(res.Suppressed, sup)
			continue
		}
		res.Findings = append(res.Findings, s.Finding)
	}
	if len(unread) > 0 {
		warn(unreadWarning(unread))
	}
	sort.SliceStable(res.Warnings, func(i, j int) bool {
		a, b := res.Warnings[i], res.Warnings[j]
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.Message < b.Message
	})
	return res
}

// decide says whether an exemption holds the subject's finding back, warning about those it
// cannot honour.
func (p Policy) decide(now time.Time, s Subject, warn func(report.Warning)) (report.Suppressed, bool) {
	f := s.Finding
	if p.Annotations {
		for _, h := range s.Holders {
			if !h.Read {
				continue // one warning for all of them (Apply)
			}
			a, err := parseAnnotation(h.Annotations, p.IDs)
			if err != nil {
				ref := h.Ref
				warn(report.Warning{Reason: WarnInvalid, Object: &ref, Message: fmt.Sprintf("%s: %v; not honoured", ref, err)})
				continue
			}
			if a == nil || !a.matches(f) {
				continue
			}
			by := report.Suppressor{Source: report.SuppressedByAnnotation, Object: &h.Ref}
			if !a.until.IsZero() && !now.Before(a.until) {
				ref := h.Ref
				warn(report.Warning{Reason: WarnExpired, Object: &ref, Message: fmt.Sprintf(
					"the ignore annotation on %s expired at %s; its findings are reported again", ref, a.until.UTC().Format(time.RFC3339))})
				continue
			}
			return suppressed(f, by, a.reason, a.until), true
		}
	}
	if p.Rules == nil {
		return report.Suppressed{}, false
	}
	for i, r := range p.Rules.Rules {
		if !r.matches(s) {
			continue
		}
		if !r.until.IsZero() && !now.Before(r.until) {
			warn(report.Warning{Reason: WarnExpired, Message: fmt.Sprintf(
				"rules[%d] of %s (%s) expired at %s; its findings are reported again", i, p.Rules.File, r.Reason, r.until.UTC().Format(time.RFC3339))})
			continue
		}
		idx := i
		return suppressed(f, report.Suppressor{Source: report.SuppressedByRule, File: p.Rules.File, Rule: &idx}, r.Reason, r.until), true
	}
	return report.Suppressed{}, false
}

// unreadWarning names the owners and namespaces whose annotations the scan did not read, a few
// of them: a long list would drown the other warnings.
func unreadWarning(refs map[string]report.ObjectRef) report.Warning {
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	const shown = 5
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	return report.Warning{Reason: WarnUnread, Message: fmt.Sprintf(
		"the scan did not read the metadata of %s (owners or namespaces of findings' objects): an ignore annotation there is not honoured", list)}
}

func suppressed(f report.Finding, by report.Suppressor, reason string, until time.Time) report.Suppressed {
	s := report.Suppressed{Finding: f, SuppressedBy: by, Reason: reason}
	if !until.IsZero() {
		u := until.UTC()
		s.SuppressedBy.Until = &u
	}
	return s
}

// annotation is a parsed, valid set of ignore annotations.
type annotation struct {
	all    bool
	ids    []string
	reason string
	until  time.Time
}

// parseAnnotation reads the ignore annotations; nil without workloaddoctor.io/ignore.
func parseAnnotation(ann map[string]string, ids IDs) (*annotation, error) {
	v, ok := ann[AnnotationIgnore]
	if !ok {
		return nil, nil
	}
	a := &annotation{reason: strings.TrimSpace(ann[AnnotationReason])}
	for _, id := range strings.Split(v, ",") {
		switch id = strings.TrimSpace(id); {
		case id == "":
		case id == "*":
			a.all = true
		case ids.check(id) || ids.rootCause(id):
			a.ids = append(a.ids, id)
		default:
			return nil, fmt.Errorf("%s names %q, which is neither a check nor a root cause", AnnotationIgnore, id)
		}
	}
	if !a.all && len(a.ids) == 0 {
		return nil, fmt.Errorf("%s is empty: name check or root-cause IDs, or *", AnnotationIgnore)
	}
	if a.reason == "" {
		return nil, fmt.Errorf("%s is required with %s", AnnotationReason, AnnotationIgnore)
	}
	if u, ok := ann[AnnotationUntil]; ok {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(u))
		if err != nil {
			return nil, fmt.Errorf("%s %q is not an RFC 3339 time", AnnotationUntil, u)
		}
		a.until = t
	}
	return a, nil
}

func (a *annotation) matches(f report.Finding) bool {
	return a.all || contains(a.ids, f.Check) || contains(a.ids, f.RootCause.ID)
}

// matches says whether every field the rule sets matches the subject.
func (r Rule) matches(s Subject) bool {
	f := s.Finding
	switch {
	case len(r.Checks) > 0 && !contains(r.Checks, f.Check),
		len(r.RootCauses) > 0 && !contains(r.RootCauses, f.RootCause.ID),
		len(r.Namespaces) > 0 && !anyGlob(r.Namespaces, f.Object.Namespace),
		len(r.Names) > 0 && !anyGlob(r.Names, f.Object.Name),
		len(r.Kinds) > 0 && !anyFold(r.Kinds, f.Object.Kind):
		return false
	}
	if r.selector != nil {
		// Labels the scan did not read cannot prove a match.
		return s.LabelsRead && r.selector.Matches(labels.Set(s.Labels))
	}
	return true
}

func anyGlob(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

func anyFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
