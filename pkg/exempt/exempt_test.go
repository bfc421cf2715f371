package exempt

import (
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

var testIDs = IDs{Checks: []string{"stuck-terminating", "rollout-stalled"}, RootCauses: []string{"finalizer-owner-missing", "image-pull-failing"}}

func TestParseFileErrorsNameTheLine(t *testing.T) {
	head := "apiVersion: workloaddoctor.io/v1alpha1\nkind: Exemptions\nrules:\n"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unknown field", "- checks: [stuck-terminating]\n  reason: r\n  namspaces: [shop]\n", "x.yaml:6: field namspaces unknown"},
		{"no reason", "- checks: [stuck-terminating]\n- checks: [rollout-stalled]\n  reason: vendor\n", "rules[0]: x.yaml:4: reason is required"},
		{"blank reason", "- checks: [stuck-terminating]\n  reason: vendor\n- names: [web-*]\n  reason: \"  \"\n", "rules[1]: x.yaml:7: reason is required"},
		{"bad glob", "- reason: r\n  names: [\"web-[\"]\n", "x.yaml:5: bad glob \"web-[\" in names"},
		{"bad selector", "- reason: r\n  labelSelector: \"app in (\"\n", "x.yaml:5: bad labelSelector"},
		{"bad date", "- reason: r\n  checks: [rollout-stalled]\n  until: 2026-12-31\n", "x.yaml:6: bad until \"2026-12-31\""},
		{"unknown check", "- reason: r\n  checks: [stuck-terminatin]\n", "x.yaml:5: unknown check \"stuck-terminatin\""},
		{"unknown root cause", "- reason: r\n  rootCauses: [nope]\n", "x.yaml:5: unknown root cause \"nope\""},
		{"matches all", "- reason: r\n", "x.yaml:4: the rule matches every finding"},
		{"wrong type", "- reason: r\n  checks: stuck-terminating\n", "x.yaml:5: cannot unmarshal"},
		{"bad yaml", "- reason: r\n  checks: [a\n", "x.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFile("x.yaml", []byte(head+tc.body), testIDs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := ParseFile("x.yaml", []byte("kind: Exemptions\nrules: []\n"), testIDs); err == nil || !strings.Contains(err.Error(), "apiVersion") {
		t.Errorf("a file without apiVersion: %v", err)
	}
	if _, err := ParseFile("x.yaml", []byte("apiVersion: workloaddoctor.io/v1alpha1\nkind: Report\n"), testIDs); err == nil || !strings.Contains(err.Error(), "x.yaml:2: kind") {
		t.Errorf("another kind: %v", err)
	}
}

func finding(check, rc, kind, ns, name string) report.Finding {
	return report.Finding{Check: check, Severity: report.SeverityError, Object: report.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: ns, Name: name, UID: ns + "-" + name},
		RootCause: report.RootCause{ID: rc}}
}

func TestRulesMatchEveryFieldSet(t *testing.T) {
	rules, err := ParseFile("ex.yaml", []byte(`apiVersion: workloaddoctor.io/v1alpha1
kind: Exemptions
rules:
- checks: [stuck-terminating]
  namespaces: ["team-*"]
  kinds: [namespace, Pod]
  reason: namespaces kept on purpose
- rootCauses: [image-pull-failing]
  names: ["canary-*"]
  labelSelector: track=canary
  reason: canaries pull from a private mirror
  until: "2026-11-28T12:00:00Z"
`), testIDs)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	p := Policy{Rules: rules, IDs: testIDs}
	canary := Subject{Finding: finding("rollout-stalled", "image-pull-failing", "Pod", "shop", "canary-1"), Labels: map[string]string{"track": "canary"}, LabelsRead: true}
	unlabelled := Subject{Finding: finding("rollout-stalled", "image-pull-failing", "Pod", "shop", "canary-2"), Labels: map[string]string{}, LabelsRead: true}
	unread := Subject{Finding: finding("rollout-stalled", "image-pull-failing", "Pod", "shop", "canary-3")}
	teamNS := Subject{Finding: finding("stuck-terminating", "finalizer-owner-missing", "Namespace", "team-a", "team-a")}
	otherNS := Subject{Finding: finding("stuck-terminating", "finalizer-owner-missing", "Pod", "shop", "web-1")}
	res := p.Apply(now, []Subject{canary, unlabelled, unread, teamNS, otherNS})
	if got := ids(res.Findings); got != "shop/canary-2 shop/canary-3 shop/web-1" {
		t.Errorf("reported %s", got)
	}
	if len(res.Suppressed) != 2 {
		t.Fatalf("suppressed %+v", res.Suppressed)
	}
	by := res.Suppressed[0].SuppressedBy
	if by.Source != report.SuppressedByRule || by.File != "ex.yaml" || *by.Rule != 1 || by.Until == nil || res.Suppressed[0].Reason != "canaries pull from a private mirror" {
		t.Errorf("canary suppressed by %+v, reason %q", by, res.Suppressed[0].Reason)
	}
	if by := res.Suppressed[1].SuppressedBy; *by.Rule != 0 || by.Until != nil {
		t.Errorf("namespace suppressed by %+v", by)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %+v", res.Warnings)
	}

	// Past its until, the rule holds nothing back and says so once.
	res = p.Apply(now.Add(2*time.Hour), []Subject{canary, canary})
	if len(res.Findings) != 2 || len(res.Suppressed) != 0 {
		t.Errorf("after until: reported %d, suppressed %d", len(res.Findings), len(res.Suppressed))
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Reason != WarnExpired || !strings.Contains(res.Warnings[0].Message, "rules[1] of ex.yaml") {
		t.Errorf("warnings %+v", res.Warnings)
	}
}

func ids(fs []report.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Object.Namespace+"/"+f.Object.Name)
	}
	return strings.Join(out, " ")
}

func TestAnnotationsOnObjectOwnerNamespace(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	f := finding("rollout-stalled", "image-pull-failing", "Pod", "shop", "web-1")
	owner := report.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-1a"}
	ns := report.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "shop"}
	ann := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	subject := func(obj, own, nsAnn map[string]string, ownerRead bool) Subject {
		return Subject{Finding: f, Holders: []Holder{
			{Ref: f.Object, Role: RoleObject, Read: true, Annotations: obj},
			{Ref: owner, Role: RoleOwner, Read: ownerRead, Annotations: own},
			{Ref: ns, Role: RoleNamespace, Read: true, Annotations: nsAnn},
		}}
	}
	valid := ann(AnnotationIgnore, "image-pull-failing", AnnotationReason, "mirror down, ticket 12")
	for _, tc := range []struct {
		name       string
		s          Subject
		annotated  string // who holds it back; "" reported
		warnReason string
	}{
		{"object", subject(valid, nil, nil, true), "pod/web-1", ""},
		{"owner", subject(nil, valid, nil, true), "replicaset/web-1a", ""},
		{"namespace, by check", subject(nil, nil, ann(AnnotationIgnore, "rollout-stalled", AnnotationReason, "r"), true), "namespace/shop", ""},
		{"star", subject(ann(AnnotationIgnore, "*", AnnotationReason, "r"), nil, nil, true), "pod/web-1", ""},
		{"another root cause", subject(ann(AnnotationIgnore, "finalizer-owner-missing", AnnotationReason, "r"), nil, nil, true), "", ""},
		{"no reason", subject(ann(AnnotationIgnore, "*"), nil, nil, true), "", WarnInvalid},
		{"unknown ID", subject(ann(AnnotationIgnore, "imagepull", AnnotationReason, "r"), nil, nil, true), "", WarnInvalid},
		{"bad until", subject(ann(AnnotationIgnore, "*", AnnotationReason, "r", AnnotationUntil, "tomorrow"), nil, nil, true), "", WarnInvalid},
		{"expired", subject(ann(AnnotationIgnore, "*", AnnotationReason, "r", AnnotationUntil, "2026-11-28T09:59:59Z"), nil, nil, true), "", WarnExpired},
		{"expired on the object, valid on the namespace", subject(ann(AnnotationIgnore, "*", AnnotationReason, "r", AnnotationUntil, "2026-11-28T09:00:00Z"), nil, valid, true), "namespace/shop", WarnExpired},
		{"not yet expired", subject(ann(AnnotationIgnore, "*", AnnotationReason, "r", AnnotationUntil, "2026-11-28T10:00:01Z"), nil, nil, true), "pod/web-1", ""},
		{"owner not read", subject(nil, nil, nil, false), "", WarnUnread},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Policy{Annotations: true, IDs: testIDs}.Apply(now, []Subject{tc.s})
			got := ""
			if len(res.Suppressed) == 1 {
				by := res.Suppressed[0].SuppressedBy
				if by.Source != report.SuppressedByAnnotation || res.Suppressed[0].Reason == "" {
					t.Errorf("suppressed by %+v, reason %q", by, res.Suppressed[0].Reason)
				}
				got = strings.TrimPrefix(by.Object.String(), "shop/")
			}
			if got != tc.annotated || len(res.Findings)+len(res.Suppressed) != 1 {
				t.Errorf("held back by %q, want %q (reported %d)", got, tc.annotated, len(res.Findings))
			}
			warned := ""
			if len(res.Warnings) > 0 {
				warned = res.Warnings[0].Reason
			}
			if warned != tc.warnReason || len(res.Warnings) > 1 {
				t.Errorf("warnings %+v, want %q", res.Warnings, tc.warnReason)
			}
		})
	}
	// --disallow-annotation-exemptions: only the file counts, and no annotation is looked at.
	res := Policy{IDs: testIDs}.Apply(now, []Subject{subject(valid, nil, nil, false)})
	if len(res.Findings) != 1 || len(res.Warnings) != 0 {
		t.Errorf("annotations disallowed: %+v", res)
	}
}
