package knowledge

import (
	"strconv"
	"strings"
	"time"
)

// FeatureGates is a parsed --feature-gates flag value.
type FeatureGates map[string]bool

// ParseFeatureGates reads every --feature-gates flag in args (the last value of a gate wins,
// as with component-base's flag parsing). Both "--flag=value" and "--flag value" forms are read.
func ParseFeatureGates(args []string) FeatureGates {
	gates := FeatureGates{}
	for _, v := range FlagValues(args, "feature-gates") {
		for _, kv := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || name == "" {
				continue
			}
			b, err := strconv.ParseBool(strings.TrimSpace(val))
			if err != nil {
				continue
			}
			gates[strings.TrimSpace(name)] = b
		}
	}
	return gates
}

// Enabled reports whether the gate is on. alpha gates are also turned on by AllAlpha=true
// unless set explicitly; every gate the checks ask about is off by default.
func (g FeatureGates) Enabled(name string, alpha bool) bool {
	if v, ok := g[name]; ok {
		return v
	}
	return alpha && g["AllAlpha"]
}

// Describe says how a gate got its value, for evidence lines.
func (g FeatureGates) Describe(name string) string {
	if v, ok := g[name]; ok {
		return "--feature-gates sets " + name + "=" + strconv.FormatBool(v)
	}
	if g["AllAlpha"] {
		return name + " is on through --feature-gates AllAlpha=true"
	}
	return name + " is off (not set in --feature-gates; default off)"
}

// FlagValues returns the values given to a flag in a container's args or command, in order.
func FlagValues(args []string, flag string) []string {
	var out []string
	long := "--" + flag
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == long || a == "-"+flag {
			if i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			continue
		}
		for _, p := range []string{long + "=", "-" + flag + "="} {
			if strings.HasPrefix(a, p) {
				out = append(out, strings.TrimPrefix(a, p))
			}
		}
	}
	return out
}

// FlagValue returns the last value of a flag, or def when it is not set.
func FlagValue(args []string, flag, def string) string {
	if v := FlagValues(args, flag); len(v) > 0 {
		return v[len(v)-1]
	}
	return def
}

// FlagDuration returns a duration flag's value, or def when it is absent or unparsable.
func FlagDuration(args []string, flag string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(FlagValue(args, flag, ""))
	if err != nil {
		return def
	}
	return d
}
