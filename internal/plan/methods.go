package plan

import "slices"

// Methods are the HTTP methods a request step sends, lower-case as its
// keys are written (get, post, ...): for a command that builds a plan
// from a method it is given (url -m).
func Methods() []string { return slices.Clone(methods) }
