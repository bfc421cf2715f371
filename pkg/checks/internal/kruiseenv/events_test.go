package kruiseenv

import (
	"strings"
	"testing"
)

func TestEventMessageDropsPodDump(t *testing.T) {
	msg := `failed to create pod: pods "web-x" is forbidden: exceeded quota: q, pod: {"metadata":{"name":"web-x"},"spec":{"containers":[{"env":[{"name":"DB_PASSWORD","value":"hunter2"}]}]}}`
	got := EventMessage(msg)
	if strings.Contains(got, "hunter2") || !strings.HasSuffix(got, "exceeded quota: q") {
		t.Errorf("EventMessage = %q", got)
	}
}
