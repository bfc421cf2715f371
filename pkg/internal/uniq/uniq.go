// Package uniq drops repeats from a list while keeping its order, which evidence, messages and
// request plans rely on to read the same from one run to the next.
package uniq

// Of returns the values of in without repeats, in the order of their first appearance; never nil,
// so an empty result encodes as [] in a report.
func Of[T comparable](in []T) []T {
	seen := make(map[T]bool, len(in))
	out := make([]T, 0, len(in))
	for _, v := range in {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
