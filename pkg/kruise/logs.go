package kruise

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// LogKind says which expectation line of the kruise-manager a log line is.
type LogKind string

// The expectation lines the checks use (pkg/controller/cloneset/cloneset_controller.go and
// pkg/controller/daemonset/daemonset_controller.go). The overtime lines are logged at the default
// verbosity; the "Not satisfied" lines only at -v=4 and above.
const (
	// LogScaleOvertime: scale expectations unsatisfied past --expectation-timeout; the reconcile is skipped.
	LogScaleOvertime LogKind = "scale-overtime"
	// LogScaleOvertimeDropped: v1.8.0+ with ForceDeleteTimeoutExpectationGate dropped the timed-out expectation.
	LogScaleOvertimeDropped LogKind = "scale-overtime-dropped"
	// LogPodUpdateOvertime: a pod's resourceVersion expectation timed out; the reconcile is skipped.
	LogPodUpdateOvertime LogKind = "pod-update-overtime"
	// LogRevisionUpdateOvertime: the updateRevision's expectation timed out (the controller drops it and goes on).
	LogRevisionUpdateOvertime LogKind = "revision-update-overtime"
	// LogNotSatisfiedScale: scale expectations not yet satisfied (V(4)).
	LogNotSatisfiedScale LogKind = "scale-not-satisfied"
	// LogNotSatisfiedPodUpdate: a pod's resourceVersion expectation not yet satisfied (V(4)).
	LogNotSatisfiedPodUpdate LogKind = "pod-update-not-satisfied"
)

// Overtime reports whether the line says an expectation outlived --expectation-timeout.
func (k LogKind) Overtime() bool {
	switch k {
	case LogScaleOvertime, LogScaleOvertimeDropped, LogPodUpdateOvertime, LogRevisionUpdateOvertime:
		return true
	}
	return false
}

// Scale reports whether the line is about scale (create/delete) expectations.
func (k LogKind) Scale() bool {
	return k == LogScaleOvertime || k == LogScaleOvertimeDropped || k == LogNotSatisfiedScale
}

// ExpectationLog is one parsed expectation line of the kruise-manager's log.
type ExpectationLog struct {
	// Line is the log line as read, without the trailing newline.
	Line string
	Kind LogKind
	// Structured is true for the klog key=value form (v1.7.0+), false for the printf form (<= v1.6).
	Structured bool
	// Time is from the klog header (month, day and clock; the year is inferred). Zero when absent.
	Time time.Time
	// WorkloadKind is CloneSet or DaemonSet (Advanced DaemonSet).
	WorkloadKind string
	// Namespace and Name are the workload's.
	Namespace, Name string
	// DirtyPods maps "create"/"delete" to the pod names the scale expectations wait for.
	DirtyPods map[string][]string
	// Pod is the pod (name only) whose update the controller waits for.
	Pod string
	// Revision is the updateRevision the controller waits for.
	Revision string
	// Overtime is how long the expectation has been unsatisfied, when the line says.
	Overtime time.Duration
}

// message patterns, structured (v1.7.0+) then printf (<= v1.6.x).
type logPattern struct {
	kind    LogKind
	wlKind  string
	message string // exact structured message
	prefix  string // printf message prefix, followed by "<ns>/<name>, ..."
}

// Order matters: longer messages that share a prefix with a shorter one come first.
var logPatterns = []logPattern{
	{kind: LogScaleOvertimeDropped, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime, and force delete the timeout Expectation"},
	{kind: LogScaleOvertime, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime", prefix: "Expectation unsatisfied overtime for "},
	{kind: LogPodUpdateOvertime, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime for CloneSet, wait for pod updating timeout"},
	{kind: LogRevisionUpdateOvertime, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime for CloneSet, wait for updateRevision updating timeout"},
	{kind: LogPodUpdateOvertime, wlKind: KindDaemonSet, message: "Expectation unsatisfied resourceVersion overtime for DaemonSet, wait for pod updating", prefix: "Expectation unsatisfied resourceVersion overtime for "},
	{kind: LogNotSatisfiedScale, wlKind: KindCloneSet, message: "Not satisfied scale", prefix: "Not satisfied scale for "},
	{kind: LogNotSatisfiedPodUpdate, wlKind: KindCloneSet, message: "Not satisfied resourceVersion for CloneSet, wait for pod updating", prefix: "Not satisfied resourceVersion for "},
	{kind: LogNotSatisfiedPodUpdate, wlKind: KindDaemonSet, message: "Not satisfied resourceVersion for DaemonSet, wait for pod updating"},
}

// ParseExpectationLogs parses every expectation line of a manager log; other lines are skipped.
// now anchors the year of klog's year-less timestamps.
func ParseExpectationLogs(text string, now time.Time) []ExpectationLog {
	var out []ExpectationLog
	for _, line := range strings.Split(text, "\n") {
		if l, ok := ParseExpectationLog(line, now); ok {
			out = append(out, l)
		}
	}
	return out
}

// ParseExpectationLog parses one line in either form:
//
//	I0612 10:11:12.123456       1 cloneset_controller.go:250] "Expectation unsatisfied overtime" cloneSet="ns/demo" scaleDirtyPods={"create":["demo-5l6cv"]} overTime="30.000366775s"
//	W0612 10:11:12.123456       1 cloneset_controller.go:230] Expectation unsatisfied overtime for ns/demo, scaleDirtyPods=map[create:[demo-5l6cv]], overtime=30.000366775s
//
// A leading RFC3339 timestamp (pods/log with timestamps=true) is accepted.
func ParseExpectationLog(line string, now time.Time) (ExpectationLog, bool) {
	line = strings.TrimRight(line, "\r\n")
	out := ExpectationLog{Line: strings.TrimSpace(line)}
	rest := strings.TrimSpace(line)
	if sp := strings.IndexByte(rest, ' '); sp > 0 {
		if t, err := time.Parse(time.RFC3339Nano, rest[:sp]); err == nil {
			out.Time = t
			rest = strings.TrimSpace(rest[sp+1:])
		}
	}
	if t, body, ok := splitKlogHeader(rest, now); ok {
		if out.Time.IsZero() {
			out.Time = t
		}
		rest = body
	}
	if strings.HasPrefix(rest, `"`) {
		msg, kvs, ok := splitQuoted(rest)
		if !ok {
			return ExpectationLog{}, false
		}
		return parseStructured(out, msg, kvs)
	}
	return parsePrintf(out, rest)
}

// splitKlogHeader strips "Lmmdd hh:mm:ss.uuuuuu threadid file:line] ".
func splitKlogHeader(s string, now time.Time) (time.Time, string, bool) {
	if len(s) < 22 || !strings.ContainsRune("IWEF", rune(s[0])) {
		return time.Time{}, s, false
	}
	end := strings.Index(s, "] ")
	if end < 0 {
		return time.Time{}, s, false
	}
	fields := strings.Fields(s[:end])
	if len(fields) < 2 || len(fields[0]) != 5 {
		return time.Time{}, s, false
	}
	body := s[end+2:]
	ts, err := time.Parse("0102 15:04:05.999999", fields[0][1:]+" "+fields[1])
	if err != nil {
		return time.Time{}, body, true
	}
	if now.IsZero() {
		now = time.Now()
	}
	// klog has no year: take the latest year that does not put the line in the future.
	t := time.Date(now.Year(), ts.Month(), ts.Day(), ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond(), time.UTC)
	if t.After(now.Add(24 * time.Hour)) {
		t = t.AddDate(-1, 0, 0)
	}
	return t, body, true
}

// splitQuoted returns the Go-quoted string at the start of s and what follows it.
func splitQuoted(s string) (string, string, bool) {
	end := quotedEnd(s)
	if end < 0 {
		return "", "", false
	}
	msg, err := strconv.Unquote(s[:end])
	if err != nil {
		return "", "", false
	}
	return msg, strings.TrimSpace(s[end:]), true
}

// quotedEnd returns the index after the closing quote of the quoted string s starts with.
func quotedEnd(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// bracketEnd returns the index after the bracket that closes the one s starts with, skipping
// JSON strings.
func bracketEnd(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			e := quotedEnd(s[i:])
			if e < 0 {
				return -1
			}
			i += e - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// parseKVs reads klog's key=value pairs. Values are Go-quoted strings, JSON objects or arrays,
// or bare tokens.
func parseKVs(s string) map[string]string {
	kvs := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || strings.ContainsFunc(s[:eq], unicode.IsSpace) {
			return kvs
		}
		key, v := s[:eq], s[eq+1:]
		var val string
		switch {
		case strings.HasPrefix(v, `"`):
			end := quotedEnd(v)
			if end < 0 {
				return kvs
			}
			u, err := strconv.Unquote(v[:end])
			if err != nil {
				u = v[1 : end-1]
			}
			val, s = u, v[end:]
		case strings.HasPrefix(v, "{") || strings.HasPrefix(v, "["):
			end := bracketEnd(v)
			if end < 0 {
				return kvs
			}
			val, s = v[:end], v[end:]
		default:
			end := strings.IndexFunc(v, unicode.IsSpace)
			if end < 0 {
				end = len(v)
			}
			val, s = v[:end], v[end:]
		}
		kvs[key] = val
	}
	return kvs
}

func parseStructured(out ExpectationLog, msg, rest string) (ExpectationLog, bool) {
	var p *logPattern
	for i := range logPatterns {
		if logPatterns[i].message == msg {
			p = &logPatterns[i]
			break
		}
	}
	if p == nil {
		return ExpectationLog{}, false
	}
	out.Kind, out.WorkloadKind, out.Structured = p.kind, p.wlKind, true
	kvs := parseKVs(rest)
	key := "cloneSet"
	if p.wlKind == KindDaemonSet {
		key = "daemonSet"
	}
	ns, name, ok := splitKey(kvs[key])
	if !ok {
		return ExpectationLog{}, false
	}
	out.Namespace, out.Name = ns, name
	if v, ok := kvs["scaleDirtyPods"]; ok {
		out.DirtyPods = parseDirtyPods(v)
	}
	if v := kvs["pod"]; v != "" {
		if _, pod, ok := splitKey(v); ok {
			out.Pod = pod
		} else {
			out.Pod = v
		}
	}
	out.Revision = kvs["updateRevisionName"]
	for _, k := range []string{"overTime", "timeout"} {
		if d, err := time.ParseDuration(kvs[k]); err == nil {
			out.Overtime = d
		}
	}
	return out, true
}

func parsePrintf(out ExpectationLog, body string) (ExpectationLog, bool) {
	var p *logPattern
	for i := range logPatterns {
		if logPatterns[i].prefix != "" && strings.HasPrefix(body, logPatterns[i].prefix) {
			p = &logPatterns[i]
			break
		}
	}
	if p == nil {
		return ExpectationLog{}, false
	}
	rest := strings.TrimPrefix(body, p.prefix)
	comma := strings.Index(rest, ", ")
	if comma < 0 {
		comma = len(rest)
	}
	ns, name, ok := splitKey(rest[:comma])
	if !ok {
		return ExpectationLog{}, false
	}
	out.Namespace, out.Name, out.WorkloadKind = ns, name, p.wlKind
	rest = strings.TrimPrefix(rest[comma:], ", ")
	out.Kind = p.kind
	switch {
	case strings.HasPrefix(rest, "scaleDirtyPods="):
		v := strings.TrimPrefix(rest, "scaleDirtyPods=")
		if end := bracketEnd(strings.TrimPrefix(v, "map")); end > 0 {
			out.DirtyPods = parseDirtyPods(v[:len("map")+end])
			rest = v[len("map")+end:]
		}
	case strings.HasPrefix(rest, "wait for pod "):
		// "wait for pod <name> updating[, timeout=<d>]"
		f := strings.Fields(strings.TrimPrefix(rest, "wait for pod "))
		if len(f) > 0 {
			out.Pod = f[0]
		}
		if p.kind == LogScaleOvertime {
			out.Kind = LogPodUpdateOvertime
		}
	case strings.HasPrefix(rest, "wait for updateRevision "):
		f := strings.Fields(strings.TrimPrefix(rest, "wait for updateRevision "))
		if len(f) > 0 {
			out.Revision = f[0]
		}
		out.Kind = LogRevisionUpdateOvertime
		if p.kind == LogNotSatisfiedPodUpdate {
			// "Not satisfied resourceVersion for ns/cs, wait for updateRevision r updating": a V(4) wait.
			out.Kind = LogNotSatisfiedPodUpdate
		}
	default:
		if p.kind == LogScaleOvertime {
			// "Expectation unsatisfied overtime for x" with an unknown tail is not a line we know.
			return ExpectationLog{}, false
		}
	}
	for _, k := range []string{"overtime=", "timeout="} {
		if i := strings.LastIndex(rest, k); i >= 0 {
			v := strings.Fields(rest[i+len(k):])
			if len(v) > 0 {
				if d, err := time.ParseDuration(strings.TrimRight(v[0], ",")); err == nil {
					out.Overtime = d
				}
			}
		}
	}
	return out, true
}

// splitKey splits "namespace/name".
func splitKey(s string) (string, string, bool) {
	ns, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || ns == "" || name == "" || strings.ContainsAny(name, "/ ") {
		return "", "", false
	}
	return ns, name, true
}

// parseDirtyPods reads scaleDirtyPods in klog's JSON form ({"create":["a","b"]}) or Go's %v
// form (map[create:[a b]]).
func parseDirtyPods(v string) map[string][]string {
	out := map[string][]string{}
	if strings.HasPrefix(v, "{") {
		var m map[string][]string
		if json.Unmarshal([]byte(v), &m) == nil {
			for k, pods := range m {
				if len(pods) > 0 {
					out[k] = pods
				}
			}
		}
		return out
	}
	v = strings.TrimPrefix(v, "map[")
	v = strings.TrimSuffix(v, "]")
	// "create:[a b] delete:[c]"
	for v != "" {
		colon := strings.Index(v, ":[")
		if colon < 0 {
			break
		}
		action := strings.TrimSpace(v[:colon])
		end := strings.IndexByte(v[colon:], ']')
		if end < 0 {
			break
		}
		if pods := strings.Fields(v[colon+2 : colon+end]); len(pods) > 0 {
			out[action] = pods
		}
		v = strings.TrimSpace(v[colon+end+1:])
	}
	return out
}

// DirtyPodNames returns every pod in DirtyPods, sorted by action then as logged.
func (l ExpectationLog) DirtyPodNames() []string {
	var out []string
	for _, action := range []string{"create", "delete"} {
		out = append(out, l.DirtyPods[action]...)
	}
	for action, pods := range l.DirtyPods {
		if action != "create" && action != "delete" {
			out = append(out, pods...)
		}
	}
	return out
}
