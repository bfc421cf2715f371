package terminating

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
)

// refusal is one refused finalizer update as a controller-runtime controller logs it: the
// reconciler's error goes back to controller-runtime, which logs "Reconciler error" with the
// controller's name and kind and the request's namespace and name.
type refusal struct {
	at                                time.Time
	controller, kind, namespace, name string
	err                               string
}

// parseRefusal reads one kept log line: the kubelet's RFC 3339 timestamp, then a klog text line
// (key="quoted value" pairs) or, with --logging-format=json, a JSON object. Lines without the
// apiserver's refusal, or that cannot be read, are not refusals.
func parseRefusal(line string) (refusal, bool) {
	ts, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.Contains(rest, knowledge.FinalizerReaddMessage) {
		return refusal{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return refusal{}, false
	}
	r := refusal{at: at}
	if strings.HasPrefix(strings.TrimSpace(rest), "{") {
		var m map[string]any
		if json.Unmarshal([]byte(rest), &m) != nil {
			return refusal{}, false
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		r.controller, r.kind, r.namespace, r.name, r.err = str("controller"), str("controllerKind"), str("namespace"), str("name"), str("err")
	} else {
		r.controller, r.kind = klogValue(rest, "controller"), klogValue(rest, "controllerKind")
		r.namespace, r.name, r.err = klogValue(rest, "namespace"), klogValue(rest, "name"), klogValue(rest, "err")
	}
	if r.err == "" {
		r.err = rest
	}
	return r, true
}

// klogValue returns the value of key="..." in a klog text line. Values are Go-quoted, so a key
// inside another value (err="... name=\"x\"") is escaped and does not match.
func klogValue(line, key string) string {
	i := strings.Index(line, " "+key+"=\"")
	if i < 0 {
		return ""
	}
	q, err := strconv.QuotedPrefix(line[i+len(key)+2:])
	if err != nil {
		return ""
	}
	v, err := strconv.Unquote(q)
	if err != nil {
		return ""
	}
	return v
}

// about reports whether the refusal is about the object of that kind, namespace and name. A line
// without the request's fields is matched on the apiserver's message, which names the object as
// Kind.group "name".
func (r refusal) about(kind, group, namespace, name string) bool {
	if r.name != "" {
		return r.name == name && r.namespace == namespace && (r.kind == "" || r.kind == kind)
	}
	return strings.Contains(r.err, kind+"."+group+" "+strconv.Quote(name))
}
