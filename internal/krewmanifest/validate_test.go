package krewmanifest

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func platform(goos, arch string) Platform {
	bin := BinName("workloaddoctor", goos)
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return Platform{
		URI:      "https://example.com/releases/v1.2.3/kubectl-workloaddoctor_v1.2.3_" + goos + "_" + arch + ext,
		Sha256:   testSHA,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"os": goos, "arch": arch}},
		Files:    []FileOperation{{From: bin, To: "."}, {From: "LICENSE", To: "."}},
		Bin:      bin,
	}
}

func validPlugin() Plugin {
	return Plugin{
		APIVersion: APIVersion,
		Kind:       Kind,
		Metadata:   Metadata{Name: "workloaddoctor"},
		Spec: Spec{
			Version:          "v1.2.3",
			Homepage:         "https://example.com/workloaddoctor",
			ShortDescription: "Diagnose and fix stuck Kubernetes workloads",
			Description:      "Finds stuck workloads and fixes them.\n\nSecond paragraph.\n",
			Caveats:          "scan needs get, list and watch; fix needs patch and delete.\n",
			Platforms: []Platform{
				platform("linux", "amd64"), platform("linux", "arm64"),
				platform("darwin", "amd64"), platform("darwin", "arm64"),
				platform("windows", "amd64"),
			},
		},
	}
}

func TestValidateAcceptsAValidManifest(t *testing.T) {
	if err := Validate("workloaddoctor", validPlugin()); err != nil {
		t.Fatal(err)
	}
	// krew's defaults: files may be left out, and a selector may use expressions or only one key.
	p := validPlugin()
	p.Spec.Platforms = []Platform{{URI: "https://example.com/a.tar.gz", Sha256: testSHA, Bin: "kubectl-workloaddoctor",
		Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "os", Operator: metav1.LabelSelectorOpIn, Values: []string{"linux", "darwin"}}}}}}
	if err := ValidateKrew("workloaddoctor", p); err != nil {
		t.Errorf("krew accepts an expression selector and no files: %v", err)
	}
}

func TestValidateKrewRules(t *testing.T) {
	sel := func(labels map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
	}
	cases := []struct {
		name   string
		plugin string // name the index file would have; "workloaddoctor" when empty
		mutate func(p *Plugin)
		want   string
	}{
		{name: "old apiVersion", mutate: func(p *Plugin) { p.APIVersion = "krew.googlecontainertools.github.com/v1alpha1" }, want: "apiVersion"},
		{name: "kind", mutate: func(p *Plugin) { p.Kind = "Plugins" }, want: "kind"},
		{name: "unsafe name", plugin: "work/doctor", mutate: func(p *Plugin) { p.Metadata.Name = "work/doctor" }, want: "not allowed"},
		{name: "windows device name", plugin: "con", mutate: func(p *Plugin) { p.Metadata.Name = "con" }, want: "not allowed"},
		{name: "name differs from file", plugin: "doctor", want: `metadata.name is "workloaddoctor"`},
		{name: "no shortDescription", mutate: func(p *Plugin) { p.Spec.ShortDescription = "" }, want: "shortDescription is empty"},
		{name: "shortDescription newline", mutate: func(p *Plugin) { p.Spec.ShortDescription = "Diagnose\nand fix" }, want: "line break"},
		{name: "shortDescription carriage return", mutate: func(p *Plugin) { p.Spec.ShortDescription = "Diagnose\rand fix" }, want: "line break"},
		{name: "no platforms", mutate: func(p *Plugin) { p.Spec.Platforms = nil }, want: "platforms is empty"},
		{name: "no version", mutate: func(p *Plugin) { p.Spec.Version = "" }, want: "version is empty"},
		{name: "version without v", mutate: func(p *Plugin) { p.Spec.Version = "1.2.3" }, want: `does not start with "v"`},
		{name: "version not semver", mutate: func(p *Plugin) { p.Spec.Version = "v1.2" }, want: "spec.version"},
		{name: "no uri", mutate: func(p *Plugin) { p.Spec.Platforms[1].URI = "" }, want: "spec.platforms[1]: uri is empty"},
		{name: "no sha256", mutate: func(p *Plugin) { p.Spec.Platforms[0].Sha256 = "" }, want: "sha256 is empty"},
		{name: "uppercase sha256", mutate: func(p *Plugin) { p.Spec.Platforms[0].Sha256 = strings.ToUpper(testSHA) }, want: "lowercase hex"},
		{name: "short sha256", mutate: func(p *Plugin) { p.Spec.Platforms[0].Sha256 = testSHA[:63] }, want: "lowercase hex"},
		{name: "no bin", mutate: func(p *Plugin) { p.Spec.Platforms[2].Bin = "" }, want: "bin is empty"},
		{name: "files present but empty", mutate: func(p *Plugin) { p.Spec.Platforms[0].Files = []FileOperation{} }, want: "files is empty"},
		{name: "file without from", mutate: func(p *Plugin) { p.Spec.Platforms[0].Files[1].From = "" }, want: "files[1].from is empty"},
		{name: "file without to", mutate: func(p *Plugin) { p.Spec.Platforms[0].Files[0].To = "" }, want: "files[0].to is empty"},
		{name: "no selector", mutate: func(p *Plugin) { p.Spec.Platforms[0].Selector = nil }, want: "selector is missing"},
		{name: "empty selector", mutate: func(p *Plugin) { p.Spec.Platforms[0].Selector = sel(nil) }, want: "selector is empty"},
		{name: "label other than os and arch", mutate: func(p *Plugin) {
			p.Spec.Platforms[0].Selector.MatchLabels["distro"] = "debian"
		}, want: `selector key "distro"`},
		{name: "expression on another key", mutate: func(p *Plugin) {
			p.Spec.Platforms[0].Selector = sel(nil, metav1.LabelSelectorRequirement{Key: "libc", Operator: metav1.LabelSelectorOpExists})
		}, want: `selector key "libc"`},
		{name: "matchLabels present but empty", mutate: func(p *Plugin) {
			p.Spec.Platforms[0].Selector = sel(map[string]string{}, metav1.LabelSelectorRequirement{Key: "os", Operator: metav1.LabelSelectorOpIn, Values: []string{"linux"}})
		}, want: "matchLabels is present but empty"},
		{name: "matchExpressions present but empty", mutate: func(p *Plugin) {
			p.Spec.Platforms[0].Selector.MatchExpressions = []metav1.LabelSelectorRequirement{}
		}, want: "matchExpressions is present but empty"},
		{name: "unsupported platform", mutate: func(p *Plugin) {
			p.Spec.Platforms[4].Selector = sel(map[string]string{"os": "plan9", "arch": "amd64"})
		}, want: "spec.platforms[4]: selector arch=amd64,os=plan9 matches no supported os/arch"},
		{name: "two platforms for one os/arch", mutate: func(p *Plugin) {
			p.Spec.Platforms[4].Selector = sel(map[string]string{"os": "linux", "arch": "amd64"})
		}, want: "spec.platforms [0 4] all select linux/amd64"},
		{name: "broad selector overlapping a specific one", mutate: func(p *Plugin) {
			p.Spec.Platforms[4].Selector = sel(map[string]string{"os": "darwin"})
		}, want: "all select darwin/amd64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validPlugin()
			if tc.mutate != nil {
				tc.mutate(&p)
			}
			name := tc.plugin
			if name == "" {
				name = "workloaddoctor"
			}
			err := ValidateKrew(name, p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ValidateKrew() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestValidateProjectRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p *Plugin)
		want   string
	}{
		{name: "shortDescription over 50", mutate: func(p *Plugin) { p.Spec.ShortDescription = strings.Repeat("x", 51) }, want: "51 characters"},
		{name: "no homepage", mutate: func(p *Plugin) { p.Spec.Homepage = "" }, want: "homepage"},
		{name: "http homepage", mutate: func(p *Plugin) { p.Spec.Homepage = "http://example.com" }, want: "homepage"},
		{name: "no description", mutate: func(p *Plugin) { p.Spec.Description = " \n" }, want: "description is empty"},
		{name: "description not wrapped", mutate: func(p *Plugin) { p.Spec.Description = "ok\n" + strings.Repeat("y", 81) + "\n" }, want: "description line 2 has 81 characters"},
		{name: "usage example in description", mutate: func(p *Plugin) { p.Spec.Description += "\n  kubectl workloaddoctor scan -A\n" }, want: "usage example"},
		{name: "shell prompt in description", mutate: func(p *Plugin) { p.Spec.Description += "\n$ workloaddoctor scan\n" }, want: "usage example"},
		{name: "no caveats", mutate: func(p *Plugin) { p.Spec.Caveats = "" }, want: "caveats is empty"},
		{name: "caveats not wrapped", mutate: func(p *Plugin) { p.Spec.Caveats = strings.Repeat("z", 90) }, want: "caveats line 1 has 90"},
		{name: "expression selector", mutate: func(p *Plugin) {
			p.Spec.Platforms[0].Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "os", Operator: metav1.LabelSelectorOpIn, Values: []string{"linux"}}}}
		}, want: "matchExpressions"},
		{name: "selector without arch", mutate: func(p *Plugin) { delete(p.Spec.Platforms[1].Selector.MatchLabels, "arch") }, want: "want exactly os and arch"},
		{name: "same platform twice", mutate: func(p *Plugin) { p.Spec.Platforms[1] = platform("linux", "amd64") }, want: "a second platform for linux/amd64"},
		{name: "plain http uri", mutate: func(p *Plugin) {
			p.Spec.Platforms[0].URI = strings.Replace(p.Spec.Platforms[0].URI, "https:", "http:", 1)
		}, want: "not an https URL"},
		{name: "uri not an archive", mutate: func(p *Plugin) { p.Spec.Platforms[0].URI = "https://example.com/kubectl-workloaddoctor" }, want: "neither a .tar.gz nor a .zip"},
		{name: "windows bin without .exe", mutate: func(p *Plugin) {
			p.Spec.Platforms[4].Bin = "kubectl-workloaddoctor"
			p.Spec.Platforms[4].Files[0].From = "kubectl-workloaddoctor"
		}, want: `want "kubectl-workloaddoctor.exe" for windows/amd64`},
		{name: "bin not installed by files", mutate: func(p *Plugin) { p.Spec.Platforms[0].Files[0].From = "README.md" }, want: "files do not install bin"},
		{name: "license not installed by files", mutate: func(p *Plugin) { p.Spec.Platforms[0].Files = p.Spec.Platforms[0].Files[:1] }, want: "LICENSE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validPlugin()
			tc.mutate(&p)
			err := ValidateProject(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ValidateProject() = %v, want an error containing %q", err, tc.want)
			}
		})
	}

	// Near misses that must pass: a glob that installs the binary and the license, 50 characters,
	// an 80-column line, and prose that mentions kubectl mid-sentence.
	p := validPlugin()
	p.Spec.Platforms[0].Files = []FileOperation{{From: "kubectl-*", To: "."}, {From: "LICENSE*", To: "."}}
	p.Spec.ShortDescription = strings.Repeat("s", 50)
	p.Spec.Description = strings.Repeat("d", 80) + "\nWorks with kubectl 1.26 and later.\n"
	if err := ValidateProject(p); err != nil {
		t.Errorf("ValidateProject() = %v, want nil", err)
	}
}

func TestParseRejectsUnknownFields(t *testing.T) {
	_, err := Parse([]byte("apiVersion: " + APIVersion + "\nkind: Plugin\nmetadata:\n  name: x\nspec:\n  platforms:\n  - sha265: abc\n"))
	if err == nil || !strings.Contains(err.Error(), "sha265") {
		t.Fatalf("Parse() = %v, want an error naming the unknown field", err)
	}
}
