package kruise

import (
	"reflect"
	"testing"
	"time"
)

// The lines below have the exact shape kruise-manager writes: klog's header, then the messages
// and keys of pkg/controller/cloneset/cloneset_controller.go (InfoS from v1.7.0, Warningf/Infof
// up to v1.6.x) and pkg/controller/daemonset/daemonset_controller.go.
func TestParseExpectationLog(t *testing.T) {
	now := time.Date(2026, 6, 13, 0, 0, 0, 0, time.UTC)
	at := func(mo time.Month, d, h, m, s, us int) time.Time {
		return time.Date(2026, mo, d, h, m, s, us*1000, time.UTC)
	}
	tests := []struct {
		name string
		line string
		want ExpectationLog
		ok   bool
	}{
		{
			name: "v1.7 scale overtime (observed with the real v1.7.0)",
			line: `I0612 10:11:12.123456       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="ns/demo" scaleDirtyPods={"create":["demo-5l6cv"]} overTime="30.000366775s"`,
			ok:   true,
			want: ExpectationLog{Kind: LogScaleOvertime, Structured: true, Time: at(6, 12, 10, 11, 12, 123456),
				WorkloadKind: KindCloneSet, Namespace: "ns", Name: "demo",
				DirtyPods: map[string][]string{"create": {"demo-5l6cv"}}, Overtime: 30000366775 * time.Nanosecond},
		},
		{
			name: "v1.8 scale overtime with two dirty pods",
			line: `I0612 10:11:12.000001       1 cloneset_controller.go:249] "Expectation unsatisfied overtime" cloneSet="shop/web" scaleDirtyPods={"delete":["web-a","web-b"]} overTime="5m0.5s"`,
			ok:   true,
			want: ExpectationLog{Kind: LogScaleOvertime, Structured: true, Time: at(6, 12, 10, 11, 12, 1),
				WorkloadKind: KindCloneSet, Namespace: "shop", Name: "web",
				DirtyPods: map[string][]string{"delete": {"web-a", "web-b"}}, Overtime: 5*time.Minute + 500*time.Millisecond},
		},
		{
			name: "v1.8 gate drops the expectation",
			line: `I0612 10:11:12.000001       1 cloneset_controller.go:266] "Expectation unsatisfied overtime, and force delete the timeout Expectation" cloneSet="shop/web" scaleDirtyPods={"create":["web-x"]} overTime="5m0s"`,
			ok:   true,
			want: ExpectationLog{Kind: LogScaleOvertimeDropped, Structured: true, Time: at(6, 12, 10, 11, 12, 1),
				WorkloadKind: KindCloneSet, Namespace: "shop", Name: "web",
				DirtyPods: map[string][]string{"create": {"web-x"}}, Overtime: 5 * time.Minute},
		},
		{
			name: "v1.7 pod updating timeout",
			line: `I0612 23:59:59.999999       1 cloneset_controller.go:292] "Expectation unsatisfied overtime for CloneSet, wait for pod updating timeout" cloneSet="shop/web" pod="shop/web-7xk2p" timeout="5m0.000123s"`,
			ok:   true,
			want: ExpectationLog{Kind: LogPodUpdateOvertime, Structured: true, Time: at(6, 12, 23, 59, 59, 999999),
				WorkloadKind: KindCloneSet, Namespace: "shop", Name: "web", Pod: "web-7xk2p",
				Overtime: 5*time.Minute + 123*time.Microsecond},
		},
		{
			name: "v1.7 updateRevision timeout",
			line: `I0612 10:00:00.000000       1 cloneset_controller.go:285] "Expectation unsatisfied overtime for CloneSet, wait for updateRevision updating timeout" cloneSet="shop/web" updateRevisionName="web-5d4f8b7c9" timeout="6m1s"`,
			ok:   true,
			want: ExpectationLog{Kind: LogRevisionUpdateOvertime, Structured: true, Time: at(6, 12, 10, 0, 0, 0),
				WorkloadKind: KindCloneSet, Namespace: "shop", Name: "web", Revision: "web-5d4f8b7c9", Overtime: 6*time.Minute + time.Second},
		},
		{
			name: "v1.7 V(4) not satisfied scale",
			line: `I0612 10:00:00.000000       1 cloneset_controller.go:235] "Not satisfied scale" cloneSet="ns/demo" scaleDirtyPods={"create":["demo-5l6cv"]}`,
			ok:   true,
			want: ExpectationLog{Kind: LogNotSatisfiedScale, Structured: true, Time: at(6, 12, 10, 0, 0, 0),
				WorkloadKind: KindCloneSet, Namespace: "ns", Name: "demo", DirtyPods: map[string][]string{"create": {"demo-5l6cv"}}},
		},
		{
			name: "v1.8 Advanced DaemonSet pod updating (ErrorS)",
			line: `E0612 10:00:00.000000       1 daemonset_controller.go:1094] "Expectation unsatisfied resourceVersion overtime for DaemonSet, wait for pod updating" daemonSet="kube-system/agent" pod="kube-system/agent-x2" timeout="5m3s"`,
			ok:   true,
			want: ExpectationLog{Kind: LogPodUpdateOvertime, Structured: true, Time: at(6, 12, 10, 0, 0, 0),
				WorkloadKind: KindDaemonSet, Namespace: "kube-system", Name: "agent", Pod: "agent-x2", Overtime: 5*time.Minute + 3*time.Second},
		},
		{
			name: "v1.6 printf scale overtime",
			line: `W0612 10:11:12.123456       1 cloneset_controller.go:230] Expectation unsatisfied overtime for ns/demo, scaleDirtyPods=map[create:[demo-5l6cv demo-9qz]], overtime=5m0.000366775s`,
			ok:   true,
			want: ExpectationLog{Kind: LogScaleOvertime, Time: at(6, 12, 10, 11, 12, 123456),
				WorkloadKind: KindCloneSet, Namespace: "ns", Name: "demo",
				DirtyPods: map[string][]string{"create": {"demo-5l6cv", "demo-9qz"}}, Overtime: 5*time.Minute + 366775*time.Nanosecond},
		},
		{
			name: "v1.6 printf pod updating",
			line: `W0612 10:11:12.123456       1 cloneset_controller.go:290] Expectation unsatisfied overtime for shop/web, wait for pod web-7xk2p updating, timeout=5m2s`,
			ok:   true,
			want: ExpectationLog{Kind: LogPodUpdateOvertime, Time: at(6, 12, 10, 11, 12, 123456),
				WorkloadKind: KindCloneSet, Namespace: "shop", Name: "web", Pod: "web-7xk2p", Overtime: 5*time.Minute + 2*time.Second},
		},
		{
			name: "v1.6 printf updateRevision",
			line: `W0612 10:11:12.123456       1 cloneset_controller.go:283] Expectation unsatisfied overtime for shop/web, wait for updateRevision web-5d4f8b7c9 updating, timeout=5m2s`,
			ok:   true,
			want: ExpectationLog{Kind: LogRevisionUpdateOvertime, Time: at(6, 12, 10, 11, 12, 123456),
				WorkloadKind: KindCloneSet, Namespace: "shop", Name: "web", Revision: "web-5d4f8b7c9", Overtime: 5*time.Minute + 2*time.Second},
		},
		{
			name: "v1.6 printf V(4) not satisfied scale",
			line: `I0612 10:11:12.123456       1 cloneset_controller.go:233] Not satisfied scale for ns/demo, scaleDirtyPods=map[delete:[demo-a]]`,
			ok:   true,
			want: ExpectationLog{Kind: LogNotSatisfiedScale, Time: at(6, 12, 10, 11, 12, 123456),
				WorkloadKind: KindCloneSet, Namespace: "ns", Name: "demo", DirtyPods: map[string][]string{"delete": {"demo-a"}}},
		},
		{
			name: "v1.6 printf Advanced DaemonSet",
			line: `E0612 10:11:12.123456       1 daemonset_controller.go:1089] Expectation unsatisfied resourceVersion overtime for kube-system/agent, wait for pod agent-x2 updating, timeout=5m0s`,
			ok:   true,
			want: ExpectationLog{Kind: LogPodUpdateOvertime, Time: at(6, 12, 10, 11, 12, 123456),
				WorkloadKind: KindDaemonSet, Namespace: "kube-system", Name: "agent", Pod: "agent-x2", Overtime: 5 * time.Minute},
		},
		{
			name: "kubectl logs --timestamps prefix",
			line: `2026-06-12T10:11:12.5Z I0612 10:11:12.123456       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="ns/demo" scaleDirtyPods={"create":["demo-5l6cv"]} overTime="30s"`,
			ok:   true,
			want: ExpectationLog{Kind: LogScaleOvertime, Structured: true, Time: time.Date(2026, 6, 12, 10, 11, 12, 500000000, time.UTC),
				WorkloadKind: KindCloneSet, Namespace: "ns", Name: "demo",
				DirtyPods: map[string][]string{"create": {"demo-5l6cv"}}, Overtime: 30 * time.Second},
		},
		{
			name: "a December line read in June belongs to last year",
			line: `W1231 23:00:00.000000       1 cloneset_controller.go:230] Expectation unsatisfied overtime for ns/demo, scaleDirtyPods=map[create:[demo-a]], overtime=5m0s`,
			ok:   true,
			want: ExpectationLog{Kind: LogScaleOvertime, Time: time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC),
				WorkloadKind: KindCloneSet, Namespace: "ns", Name: "demo", DirtyPods: map[string][]string{"create": {"demo-a"}}, Overtime: 5 * time.Minute},
		},
		{name: "unrelated line", line: `I0612 10:00:00.000000       1 controller.go:219] "Starting workers" controller="cloneset" worker count=3`},
		{name: "expectation word in another message", line: `I0612 10:00:00.000000       1 x.go:1] "Expectation observed" cloneSet="ns/demo"`},
		{name: "missing workload key", line: `I0612 10:00:00.000000       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" scaleDirtyPods={"create":["a"]}`},
		{name: "truncated quote", line: `I0612 10:00:00.000000       1 cloneset_controller.go:232] "Expectation unsatisfied overtime`},
		{name: "empty", line: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseExpectationLog(tt.line, now)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (got %+v)", ok, tt.ok, got)
			}
			if !ok {
				return
			}
			tt.want.Line = tt.line
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseExpectationLogsKeepsOnlyExpectationLines(t *testing.T) {
	text := `I0612 10:00:00.000000       1 controller.go:219] "Starting workers" controller="cloneset" worker count=3
I0612 10:00:01.000000       1 cloneset_controller.go:235] "Not satisfied scale" cloneSet="ns/demo" scaleDirtyPods={"create":["demo-5l6cv"]}
I0612 10:00:31.000000       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="ns/demo" scaleDirtyPods={"create":["demo-5l6cv"]} overTime="30.000366775s"

W0612 10:00:31.000000       1 cloneset_controller.go:230] Expectation unsatisfied overtime for ns/other, scaleDirtyPods=map[create:[other-a]], overtime=30s
`
	got := ParseExpectationLogs(text, time.Date(2026, 6, 13, 0, 0, 0, 0, time.UTC))
	if len(got) != 3 {
		t.Fatalf("got %d lines, want 3: %+v", len(got), got)
	}
	if got[0].Kind != LogNotSatisfiedScale || got[1].Kind != LogScaleOvertime || got[2].Name != "other" || got[2].Structured {
		t.Errorf("unexpected parse: %+v", got)
	}
	if !got[1].Kind.Overtime() || got[0].Kind.Overtime() || !got[1].Kind.Scale() {
		t.Errorf("Overtime/Scale wrong for %v and %v", got[0].Kind, got[1].Kind)
	}
	if names := got[1].DirtyPodNames(); !reflect.DeepEqual(names, []string{"demo-5l6cv"}) {
		t.Errorf("DirtyPodNames = %v", names)
	}
}

func TestParseKVsValueForms(t *testing.T) {
	got := parseKVs(`a="x \"q\" y" b={"k":["v]","w"]} c=[1,2] d=<nil> e=3`)
	want := map[string]string{"a": `x "q" y`, "b": `{"k":["v]","w"]}`, "c": "[1,2]", "d": "<nil>", "e": "3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseKVs = %v, want %v", got, want)
	}
}
