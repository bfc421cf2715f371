package report

import (
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

// Read reads a saved `scan -o json` (or -o yaml) report; "-" reads stdin.
func Read(path string, stdin io.Reader) (*Report, error) {
	data, err := readInput(path, stdin)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// readInput reads a saved document from path, or stdin for "-".
func readInput(path string, stdin io.Reader) ([]byte, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	return data, nil
}

// Parse decodes and validates a report document; name says where it came from, in errors.
func Parse(data []byte, name string) (*Report, error) {
	var r Report
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("report %s is not a workloaddoctor report: %w", name, err)
	}
	if r.APIVersion != APIVersion || r.Kind != Kind {
		return nil, fmt.Errorf("report %s has apiVersion %q and kind %q, want %s %s (the output of `scan -o json`)",
			name, r.APIVersion, r.Kind, APIVersion, Kind)
	}
	for i, f := range r.Findings {
		if f.ID == "" || f.Check == "" || f.Object.Kind == "" || f.Object.Name == "" {
			return nil, fmt.Errorf("report %s: finding %d lacks its id, check or object", name, i)
		}
	}
	r.Normalize()
	return &r, nil
}
