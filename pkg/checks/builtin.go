package checks

// builtin lists every check the plugin ships. Each check lives in its own file.
func builtin() []Check {
	return []Check{
		StuckPreparingNormal(),
		ExpectationsUnsatisfied(),
		StuckTerminating{},
		ResizePolicyDrift(),
	}
}
