package kruise

import (
	"strings"
	"time"
)

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
