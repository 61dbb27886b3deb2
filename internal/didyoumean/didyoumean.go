// Package didyoumean finds the name a user probably meant: the "did you
// mean" of the configuration loader, of test files and of expressions.
package didyoumean

import "strings"

// MaxDistance is the largest edit distance at which a name is suggested:
// two typos, or one transposition. Farther names suggest nothing, since
// a guess that is wrong misleads more than no guess.
const MaxDistance = 2

// Closest returns the name of names nearest to word (compared without
// regard to word's case) and true, or "" and false when none is within
// MaxDistance. Of names equally near, the first wins.
func Closest(word string, names []string) (string, bool) {
	word = strings.ToLower(word)
	best, bestD := "", MaxDistance+1
	for _, name := range names {
		if d := Distance(word, name); d < bestD {
			best, bestD = name, d
		}
	}
	return best, best != ""
}

// Distance is the Levenshtein distance between a and b, in bytes: the
// insertions, deletions and substitutions that turn one into the other.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
