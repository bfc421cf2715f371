package snapshot

import (
	"errors"
	"testing"
)

func TestHides(t *testing.T) {
	if Hides(InputEvents, InputControllerLogs, InputClusterAPILogs, InputAdmission) {
		t.Error("inputs that only add evidence hide findings")
	}
	if !Hides(InputEvents, InputPods) || !Hides([]string{"objects"}...) {
		t.Error("an input checks detect from does not hide findings")
	}
	if !Hides[Input]() {
		t.Error("no input named (an older report's note) must assume the worst")
	}
}

func TestUnreadInput(t *testing.T) {
	denied := &UnreadError{Input: InputNodes, Err: errors.New("forbidden: list nodes"), Limit: true}
	s := &Snapshot{Unread: map[Input]error{
		InputNodes:  denied,
		InputPods:   errors.New("list pods: 500"), // recorded by hand, unclassified
		InputEvents: &UnreadError{Input: InputEvents, Err: errors.New("list events: 500")},
	}}
	if u, ok := s.UnreadInput(InputNodes); !ok || u != denied || u.Blinds() || !u.Hides() {
		t.Errorf("a stated limit: %+v", u)
	}
	if u, ok := s.UnreadInput(InputPods); !ok || u.Limit || !u.Blinds() || u.Error() != "list pods: 500" {
		t.Errorf("an unclassified error is a failure to look: %+v", u)
	}
	if u, ok := s.UnreadInput(InputEvents); !ok || u.Blinds() || u.Hides() {
		t.Errorf("unread events only degrade: %+v", u)
	}
	if u, ok := s.UnreadInput(InputNamespaces); ok || u != nil {
		t.Errorf("a read input is unread: %+v", u)
	}
}
