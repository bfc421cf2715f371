package kruise

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
)

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
