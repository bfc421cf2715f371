// Package exempt decides which findings a team has accepted: the `workloaddoctor.io/ignore`
// annotations on an object, its owners or its namespace, and the rules of an `--exemptions`
// file. It is pure: the scan hands it each finding with the metadata it read, and it says which
// findings stay quiet, who silenced them and why, and what it could not honour.
package exempt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
)

// The document an --exemptions file holds.
const (
	APIVersion = "workloaddoctor.io/v1alpha1"
	Kind       = "Exemptions"
)

// IDs are the check and root-cause IDs a rule or an annotation may name; anything else is a typo
// that would silently exempt nothing, so it is refused.
type IDs struct {
	Checks     []string
	RootCauses []string
}

func (ids IDs) check(id string) bool     { return contains(ids.Checks, id) }
func (ids IDs) rootCause(id string) bool { return contains(ids.RootCauses, id) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Rules are the rules of one --exemptions file.
type Rules struct {
	// File is the name the file was given by, for reports and messages.
	File  string
	Rules []Rule
}

// Rule exempts the findings it matches: every field that is set must match (a list matches when
// any of its entries does).
type Rule struct {
	Checks        []string `yaml:"checks"`
	RootCauses    []string `yaml:"rootCauses"`
	Namespaces    []string `yaml:"namespaces"`
	Kinds         []string `yaml:"kinds"`
	Names         []string `yaml:"names"`
	LabelSelector string   `yaml:"labelSelector"`
	Reason        string   `yaml:"reason"`
	Until         string   `yaml:"until"`

	selector labels.Selector
	until    time.Time
}

type document struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Rules      []Rule `yaml:"rules"`
}

// ParseFile reads an exemptions file. Every error names the file and the line at fault.
func ParseFile(name string, data []byte, ids IDs) (*Rules, error) {
	var doc document
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true) // a misspelt field would otherwise widen a rule without a word
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file: want kind: %s with rules", name, Kind)
		}
		return nil, fmt.Errorf("%s", located(name, err))
	}
	// The node tree gives each rule and field its line, for the checks yaml cannot make.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s", located(name, err))
	}
	top := mapping(&root)
	at := func(n *yaml.Node) string { return fmt.Sprintf("%s:%d", name, line(n)) }
	if doc.APIVersion != APIVersion {
		return nil, fmt.Errorf("%s: apiVersion %q: want %s", at(value(top, "apiVersion", top)), doc.APIVersion, APIVersion)
	}
	if doc.Kind != Kind {
		return nil, fmt.Errorf("%s: kind %q: want %s", at(value(top, "kind", top)), doc.Kind, Kind)
	}
	if len(doc.Rules) == 0 {
		return nil, fmt.Errorf("%s: no rules", at(value(top, "rules", top)))
	}
	items := value(top, "rules", top).Content
	for i := range doc.Rules {
		node := top
		if i < len(items) {
			node = items[i]
		}
		if err := doc.Rules[i].compile(ids, func(field string) string { return at(value(node, field, node)) }); err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
	}
	return &Rules{File: name, Rules: doc.Rules}, nil
}

// compile checks a rule and parses its selector and expiry; at names the line of a field.
func (r *Rule) compile(ids IDs, at func(field string) string) error {
	if strings.TrimSpace(r.Reason) == "" {
		return fmt.Errorf("%s: reason is required: say why these findings are accepted", at("reason"))
	}
	if len(r.Checks)+len(r.RootCauses)+len(r.Namespaces)+len(r.Kinds)+len(r.Names) == 0 && r.LabelSelector == "" {
		return fmt.Errorf("%s: the rule matches every finding: name checks, rootCauses, namespaces, kinds, names or a labelSelector (names: [\"*\"] if that is meant)", at("reason"))
	}
	for _, id := range r.Checks {
		if !ids.check(id) {
			return fmt.Errorf("%s: unknown check %q (kubectl workloaddoctor checks lists them)", at("checks"), id)
		}
	}
	for _, id := range r.RootCauses {
		if !ids.rootCause(id) {
			return fmt.Errorf("%s: unknown root cause %q (kubectl workloaddoctor checks lists them)", at("rootCauses"), id)
		}
	}
	for field, globs := range map[string][]string{"namespaces": r.Namespaces, "names": r.Names} {
		for _, g := range globs {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				return fmt.Errorf("%s: bad glob %q in %s", at(field), g, field)
			}
		}
	}
	for _, k := range r.Kinds {
		if k == "" || strings.ContainsAny(k, "*?[/") {
			return fmt.Errorf("%s: bad kind %q: want a kind such as Pod or CloneSet", at("kinds"), k)
		}
	}
	if r.LabelSelector != "" {
		sel, err := labels.Parse(r.LabelSelector)
		if err != nil {
			return fmt.Errorf("%s: bad labelSelector %q: %w", at("labelSelector"), r.LabelSelector, err)
		}
		r.selector = sel
	}
	if r.Until != "" {
		t, err := time.Parse(time.RFC3339, r.Until)
		if err != nil {
			return fmt.Errorf("%s: bad until %q: want an RFC 3339 time such as 2026-12-31T00:00:00Z", at("until"), r.Until)
		}
		r.until = t
	}
	return nil
}

// located rewrites yaml's "line N: ..." errors as "FILE:N: ...", joined, without the Go type
// names a user has no use for.
func located(name string, err error) string {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	for i, m := range msgs {
		if k := strings.Index(m, " in type "); k >= 0 {
			m = m[:k]
		}
		m = strings.Replace(m, "not found", "unknown", 1)
		where := name
		if rest, ok := strings.CutPrefix(m, "line "); ok {
			if num, msg, ok := strings.Cut(rest, ": "); ok {
				if n, err := strconv.Atoi(num); err == nil {
					where, m = fmt.Sprintf("%s:%d", name, n), msg
				}
			}
		}
		msgs[i] = where + ": " + m
	}
	return strings.Join(msgs, "; ")
}

// mapping returns the top mapping node of a document.
func mapping(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return n.Content[0]
	}
	return n
}

// value returns the value node of key in mapping m, or def.
func value(m *yaml.Node, key string, def *yaml.Node) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return def
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return def
}

func line(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}
