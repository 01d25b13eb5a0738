package suggest

// Distance is the edit distance between a and b in characters, counting a
// swap of neighbours as one edit (optimal string alignment).
func Distance(a, b string) int {
	return distance([]rune(a), []rune(b), true)
}
