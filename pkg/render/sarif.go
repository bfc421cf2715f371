package render

import (
	"io"
	"slices"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/version"
)

// The SARIF 2.1.0 objects the report maps to (OASIS SARIF 2.1.0, section 3).
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID               string         `json:"id"`
	Name             string         `json:"name"`
	ShortDescription sarifText      `json:"shortDescription"`
	FullDescription  sarifText      `json:"fullDescription"`
	Help             sarifText      `json:"help"`
	Default          sarifLevel     `json:"defaultConfiguration"`
	Properties       map[string]any `json:"properties"`
}

type sarifLevel struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	Fingerprints        map[string]string `json:"fingerprints"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties"`
}

type sarifLocation struct {
	Physical *sarifPhysical `json:"physicalLocation,omitempty"`
	Logical  []sarifLogical `json:"logicalLocations"`
}

type sarifPhysical struct {
	Artifact sarifArtifact `json:"artifactLocation"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// fingerprintKey names the finding ID among a result's fingerprints; the ID is stable while the
// object, check and root cause stay the same, which is what a code-scanning UI keys alerts on.
const fingerprintKey = "workloaddoctor/findingId/v1"

// SARIF writes the report as a SARIF 2.1.0 log: a rule for each root cause of the checks the
// scan ran (from the catalog `checks` and `explain` print), and a result for each finding,
// located in the file a kustomize build recorded when the object or its owner has one, else
// logically (namespace/kind/name). Suppressed findings are left out: a code-scanning UI would
// raise them again.
func SARIF(w io.Writer, r *report.Report) error {
	reg := builtin.Checks()
	ran := append([]string{}, r.Coverage.Checks...)
	for _, n := range r.Coverage.Skipped {
		ran = append(ran, n.Check)
	}
	for _, f := range r.Findings {
		ran = append(ran, f.Check)
	}
	var rules []sarifRule
	index := map[string]int{}
	for _, c := range reg.All() {
		info := c.Info()
		if !slices.Contains(ran, info.ID) {
			continue
		}
		for _, rc := range info.RootCauses {
			index[ruleID(info.ID, rc.ID)] = len(rules)
			rules = append(rules, sarifRuleOf(info, rc))
		}
	}
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "kubectl-workloaddoctor", Version: version.Get().Version,
		InformationURI: "https://github.com/workloaddoctor/kubectl-workloaddoctor", Rules: rules}}, Results: []sarifResult{}}
	if run.Tool.Driver.Rules == nil {
		run.Tool.Driver.Rules = []sarifRule{}
	}
	for _, f := range r.Findings {
		id := ruleID(f.Check, f.RootCause.ID)
		i, ok := index[id]
		if !ok {
			i = -1 // a root cause the catalog does not know: SARIF's "no rule object"
		}
		run.Results = append(run.Results, sarifResultOf(f, id, i))
	}
	return JSON(w, sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
}

// ruleID is a root cause qualified by its check: a root-cause ID can belong to several checks.
func ruleID(check, rootCause string) string { return check + "/" + rootCause }

func sarifLevelOf(s report.Severity) string {
	switch s {
	case report.SeverityError:
		return "error"
	case report.SeverityWarning:
		return "warning"
	}
	return "note"
}

func sarifRuleOf(info checks.Info, rc checks.RootCause) sarifRule {
	explain := "kubectl workloaddoctor explain " + rc.ID
	help := rc.Description + "\n\nMore: `" + explain + "`; the check: `kubectl workloaddoctor explain " + info.ID + "`."
	if len(rc.Actions) > 0 {
		help += " Fixes: " + strings.Join(rc.Actions, ", ") + " (`kubectl workloaddoctor fix ID`)."
	}
	props := map[string]any{"tags": []string{info.ID, "kubernetes", "stuck-workloads"}, "check": info.ID, "rootCause": rc.ID, "explain": explain}
	if len(rc.References) > 0 {
		props["references"] = rc.References
	}
	return sarifRule{
		ID: ruleID(info.ID, rc.ID), Name: rc.ID,
		ShortDescription: sarifText{Text: rc.Title},
		FullDescription:  sarifText{Text: rc.Description},
		Help:             sarifText{Text: help, Markdown: help},
		Default:          sarifLevel{Level: sarifLevelOf(rc.Severity)},
		Properties:       props,
	}
}

func sarifResultOf(f report.Finding, rule string, index int) sarifResult {
	text := f.Summary
	if f.RootCause.Message != "" {
		text += ". " + f.RootCause.Message
	}
	loc := sarifLocation{Logical: []sarifLogical{{Name: f.Object.Name, FullyQualifiedName: f.Object.String(), Kind: "resource"}}}
	if f.Origin != nil {
		loc.Physical = &sarifPhysical{Artifact: sarifArtifact{URI: f.Origin.Path}}
	}
	props := map[string]any{"findingId": f.ID, "object": f.Object.String(), "evidence": f.RootCause.Evidence}
	if f.Object.UID != "" {
		props["uid"] = f.Object.UID
	}
	if len(f.Fixes) > 0 {
		var actions []string
		for _, x := range f.Fixes {
			actions = append(actions, x.Action)
		}
		props["fixes"] = actions
	}
	return sarifResult{
		RuleID: rule, RuleIndex: index, Level: sarifLevelOf(f.Severity),
		Message:             sarifText{Text: text},
		Locations:           []sarifLocation{loc},
		Fingerprints:        map[string]string{fingerprintKey: f.ID},
		PartialFingerprints: map[string]string{fingerprintKey: f.ID},
		Properties:          props,
	}
}
