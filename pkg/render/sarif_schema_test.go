package render

import (
	"fmt"
	"slices"
	"sort"
)

// validateSARIF checks a decoded SARIF log against the rules of the SARIF 2.1.0 JSON schema
// (OASIS SARIF 2.1.0, sarif-schema-2.1.0.json) for the objects this tool writes: required
// properties, types, enums and minimums, and no property the schema does not define (its
// objects are closed: additionalProperties false), except inside property bags. The schema
// file itself is not vendored: its licence (OASIS IPR policy) is not an open-source licence
// this repository can take. It returns one error per violation, with the JSON path.
func validateSARIF(doc map[string]any) []error {
	v := &sarifValidator{}
	v.object("$", doc, shape{
		required: []string{"version", "runs"},
		fields: map[string]check{
			"$schema": v.uri, "version": v.isConst("2.1.0"), "runs": v.arrayOf(v.run, 1),
			"inlineExternalProperties": v.arrayOf(nil, 0), "properties": v.bag,
		},
	})
	return v.errs
}

type check func(path string, x any)

type shape struct {
	required []string
	// anyOf: at least one of these must be present.
	anyOf  []string
	fields map[string]check
}

type sarifValidator struct{ errs []error }

func (v *sarifValidator) fail(path, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
}

func (v *sarifValidator) object(path string, x any, s shape) {
	m, ok := x.(map[string]any)
	if !ok {
		v.fail(path, "want an object, got %T", x)
		return
	}
	for _, r := range s.required {
		if _, ok := m[r]; !ok {
			v.fail(path, "required property %q missing", r)
		}
	}
	if len(s.anyOf) > 0 && !slices.ContainsFunc(s.anyOf, func(k string) bool { _, ok := m[k]; return ok }) {
		v.fail(path, "want one of %v", s.anyOf)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c, ok := s.fields[k]
		if !ok {
			v.fail(path, "property %q is not defined by the schema", k)
			continue
		}
		if c != nil {
			c(path+"."+k, m[k])
		}
	}
}

func isString(v *sarifValidator) check {
	return func(path string, x any) {
		if _, ok := x.(string); !ok {
			v.fail(path, "want a string, got %T", x)
		}
	}
}

func (v *sarifValidator) isConst(want string) check {
	return func(path string, x any) {
		if x != want {
			v.fail(path, "want %q, got %v", want, x)
		}
	}
}

// arrayOf checks an array and, when item is set, each of its items.
func (v *sarifValidator) arrayOf(item check, minItems int) check {
	return func(path string, x any) {
		a, ok := x.([]any)
		if !ok || len(a) < minItems {
			v.fail(path, "want an array of at least %d items, got %v", minItems, x)
			return
		}
		for i, e := range a {
			if item != nil {
				item(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
}

func (v *sarifValidator) bag(path string, x any) {
	m, ok := x.(map[string]any)
	if !ok {
		v.fail(path, "a property bag must be an object")
		return
	}
	if tags, ok := m["tags"]; ok {
		a, ok := tags.([]any)
		seen := map[any]bool{}
		for _, t := range a {
			if _, s := t.(string); !s || seen[t] {
				v.fail(path+".tags", "want unique strings, got %v", tags)
			}
			seen[t] = true
		}
		if !ok {
			v.fail(path+".tags", "want an array")
		}
	}
}

func (v *sarifValidator) message(path string, x any) {
	v.object(path, x, shape{anyOf: []string{"text", "id"}, fields: map[string]check{
		"text": isString(v), "markdown": isString(v), "id": isString(v), "arguments": nil, "properties": v.bag}})
}

func (v *sarifValidator) multiformat(path string, x any) {
	v.object(path, x, shape{required: []string{"text"}, fields: map[string]check{
		"text": isString(v), "markdown": isString(v), "properties": v.bag}})
}

func (v *sarifValidator) level(path string, x any) {
	if !slices.Contains([]any{"none", "note", "warning", "error"}, x) {
		v.fail(path, "level %v is not one of none, note, warning, error", x)
	}
}

func (v *sarifValidator) run(path string, x any) {
	v.object(path, x, shape{required: []string{"tool"}, fields: map[string]check{
		"tool": v.tool, "results": v.arrayOf(v.result, 0), "invocations": nil, "automationDetails": nil,
		"originalUriBaseIds": nil, "artifacts": nil, "properties": v.bag,
	}})
}

func (v *sarifValidator) tool(path string, x any) {
	v.object(path, x, shape{required: []string{"driver"}, fields: map[string]check{
		"driver": v.component, "extensions": nil, "properties": v.bag}})
}

func (v *sarifValidator) component(path string, x any) {
	v.object(path, x, shape{required: []string{"name"}, fields: map[string]check{
		"name": isString(v), "version": isString(v), "semanticVersion": isString(v), "fullName": isString(v),
		"informationUri": v.uri, "organization": isString(v), "rules": v.uniqueRules,
		"shortDescription": v.multiformat, "fullDescription": v.multiformat, "properties": v.bag,
	}})
}

func (v *sarifValidator) uri(path string, x any) {
	if s, ok := x.(string); !ok || s == "" {
		v.fail(path, "want a URI, got %v", x)
	}
}

func (v *sarifValidator) uniqueRules(path string, x any) {
	a, ok := x.([]any)
	if !ok {
		v.fail(path, "want an array")
		return
	}
	ids := map[any]bool{}
	for i, r := range a {
		p := fmt.Sprintf("%s[%d]", path, i)
		v.object(p, r, shape{required: []string{"id"}, fields: map[string]check{
			"id": isString(v), "name": isString(v), "guid": nil, "deprecatedIds": nil,
			"shortDescription": v.multiformat, "fullDescription": v.multiformat, "help": v.multiformat,
			"helpUri": v.uri, "messageStrings": nil, "relationships": nil, "properties": v.bag,
			"defaultConfiguration": func(p string, x any) {
				v.object(p, x, shape{fields: map[string]check{"enabled": nil, "level": v.level, "rank": nil, "parameters": nil, "properties": v.bag}})
			},
		}})
		if m, ok := r.(map[string]any); ok {
			if ids[m["id"]] {
				v.fail(p, "rule id %v twice", m["id"])
			}
			ids[m["id"]] = true
		}
	}
}

func (v *sarifValidator) result(path string, x any) {
	v.object(path, x, shape{required: []string{"message"}, fields: map[string]check{
		"ruleId": isString(v), "ruleIndex": v.ruleIndex, "rule": nil, "kind": nil, "level": v.level,
		"message": v.message, "locations": v.locations, "guid": nil, "correlationGuid": nil,
		"partialFingerprints": v.stringMap, "fingerprints": v.stringMap, "relatedLocations": v.locations,
		"suppressions": nil, "baselineState": nil, "rank": nil, "properties": v.bag,
	}})
}

func (v *sarifValidator) ruleIndex(path string, x any) {
	f, ok := x.(float64)
	if !ok || f != float64(int(f)) || f < -1 {
		v.fail(path, "want an integer >= -1, got %v", x)
	}
}

func (v *sarifValidator) stringMap(path string, x any) {
	m, ok := x.(map[string]any)
	if !ok {
		v.fail(path, "want an object of strings")
		return
	}
	for k, s := range m {
		if _, ok := s.(string); !ok {
			v.fail(path+"."+k, "want a string, got %T", s)
		}
	}
}

func (v *sarifValidator) locations(path string, x any) {
	a, ok := x.([]any)
	if !ok {
		v.fail(path, "want an array")
		return
	}
	for i, l := range a {
		v.object(fmt.Sprintf("%s[%d]", path, i), l, shape{fields: map[string]check{
			"id": nil, "message": v.message, "annotations": nil, "relationships": nil, "properties": v.bag,
			"physicalLocation": func(p string, x any) {
				v.object(p, x, shape{anyOf: []string{"address", "artifactLocation"}, fields: map[string]check{
					"address": nil, "region": nil, "contextRegion": nil, "properties": v.bag,
					"artifactLocation": func(p string, x any) {
						v.object(p, x, shape{fields: map[string]check{"uri": v.uri, "uriBaseId": isString(v), "index": nil, "description": v.message, "properties": v.bag}})
					},
				}})
			},
			"logicalLocations": func(p string, x any) {
				items, ok := x.([]any)
				if !ok {
					v.fail(p, "want an array")
					return
				}
				for j, ll := range items {
					v.object(fmt.Sprintf("%s[%d]", p, j), ll, shape{fields: map[string]check{
						"name": isString(v), "index": nil, "fullyQualifiedName": isString(v), "decoratedName": isString(v),
						"parentIndex": nil, "kind": isString(v), "properties": v.bag}})
				}
			},
		}})
	}
}
