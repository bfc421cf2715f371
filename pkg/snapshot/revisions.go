package snapshot

// RevisionRead names a ControllerRevision a check wants read: Full for its data (the template
// it records), else its metadata only (when it was created).
type RevisionRead struct {
	Namespace, Name string
	Full            bool
}
