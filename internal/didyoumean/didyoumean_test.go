package didyoumean

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"expect", "input", "name", "dead_letter"}
	for _, tc := range []struct {
		name, word, want string
	}{
		{"a misspelt name suggests the name", "inptu", "input"},
		{"a name with a letter too many suggests the name", "expected", "expect"},
		{"case does not count", "NAME", "name"},
		{"a word far from every name suggests nothing", "outcome", ""},
		{"the nearest of several close names wins", "deadletter", "dead_letter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Closest(tc.word, names)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("Closest(%q) = %q, %v; want %q", tc.word, got, ok, tc.want)
			}
		})
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"and", "and", 0}, {"ab", "ba", 2},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
