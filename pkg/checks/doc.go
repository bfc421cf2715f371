package checks

import (
	"fmt"
	"strings"
)

// Document completes info with the prose its Markdown documentation holds, so the code keeps
// only what it acts on (IDs, severities, actions, inputs) and the prose reads as prose:
//
//	# <check title>
//	<description>
//	## <root-cause ID>: <root-cause title>
//	<description>
//	References:
//	- <reference>
//
// Lines of a paragraph are joined with a space and paragraphs with a blank line, so the text may
// wrap anywhere between words. Every root cause of info must be documented, and nothing else.
func Document(info Info, markdown string) (Info, error) {
	title, body, sections, err := splitSections(markdown)
	if err != nil {
		return info, fmt.Errorf("documentation of %s: %w", info.ID, err)
	}
	info.Title, info.Description = title, prose(body)
	causes := append([]RootCause(nil), info.RootCauses...)
	for i := range causes {
		rc := &causes[i]
		s, ok := sections[rc.ID]
		if !ok {
			return info, fmt.Errorf("documentation of %s: root cause %s is not documented", info.ID, rc.ID)
		}
		delete(sections, rc.ID)
		rc.Title = s.title
		rc.Description, rc.References = prose(s.body), s.references
	}
	for id := range sections {
		return info, fmt.Errorf("documentation of %s: %s is not one of its root causes", info.ID, id)
	}
	info.RootCauses = causes
	return info, nil
}

// Documented is embedded by a check to serve the Info it was documented with when it was built.
type Documented struct{ info Info }

// Describe documents info with its Markdown (see Document) for a check to embed. The Markdown is
// embedded in the binary, so an error is a mistake every test run shows: it panics.
func Describe(info Info, markdown string) Documented {
	info, err := Document(info, markdown)
	if err != nil {
		panic(err)
	}
	return Documented{info: info}
}

// Info describes the check and its root causes.
func (d Documented) Info() Info { return d.info }

type section struct {
	title      string
	body       []string
	references []string
}

// splitSections reads the check's heading and text, and each root cause's section by ID.
func splitSections(markdown string) (string, []string, map[string]*section, error) {
	lines := strings.Split(strings.TrimSpace(markdown), "\n")
	title, ok := strings.CutPrefix(lines[0], "# ")
	if !ok {
		return "", nil, nil, fmt.Errorf("it does not start with a \"# <title>\" heading")
	}
	var body []string
	sections := map[string]*section{}
	var cur *section
	inRefs := false
	for _, l := range lines[1:] {
		if h, ok := strings.CutPrefix(l, "## "); ok {
			id, t, ok := strings.Cut(h, ": ")
			if !ok || sections[id] != nil {
				return "", nil, nil, fmt.Errorf("heading %q is not \"## <root-cause ID>: <title>\" or repeats an ID", l)
			}
			cur, inRefs = &section{title: t}, false
			sections[id] = cur
			continue
		}
		switch {
		case cur == nil:
			body = append(body, l)
		case l == "References:":
			inRefs = true
		case inRefs && strings.HasPrefix(l, "- "):
			cur.references = append(cur.references, strings.TrimPrefix(l, "- "))
		case inRefs && l != "":
			return "", nil, nil, fmt.Errorf("line %q follows the references of a root cause", l)
		default:
			cur.body = append(cur.body, l)
		}
	}
	return title, body, sections, nil
}

// prose joins wrapped lines into paragraphs.
func prose(lines []string) string {
	var paras []string
	var para []string
	for _, l := range append(lines, "") {
		if strings.TrimSpace(l) != "" {
			para = append(para, strings.TrimSpace(l))
			continue
		}
		if len(para) > 0 {
			paras = append(paras, strings.Join(para, " "))
			para = nil
		}
	}
	return strings.Join(paras, "\n\n")
}
