package lang

import (
	"errors"

	"github.com/grafana/sobek"
	jsparser "github.com/grafana/sobek/parser"
)

// Program is a compiled script, run per user by the script runtime.
type Program = sobek.Program

// CompileScript compiles src, a whole script, in strict mode (a misspelt
// variable is then an error, not a new global), naming it file. On failure
// it returns where in src the error is, as 1-based line and column, and
// the engine's message.
func CompileScript(file, src string) (*Program, [2]int, string) {
	ast, err := jsparser.ParseFile(nil, file, src, 0)
	if err != nil {
		var list jsparser.ErrorList
		var one *jsparser.Error
		switch {
		case errors.As(err, &list) && len(list) > 0:
			one = list[0]
		case errors.As(err, &one):
		default:
			return nil, [2]int{}, err.Error()
		}
		return nil, [2]int{one.Position.Line, one.Position.Column}, one.Message
	}
	prog, err := sobek.CompileAST(ast, true)
	if err != nil {
		var se *sobek.CompilerSyntaxError
		if errors.As(err, &se) && se.File != nil {
			at := se.File.Position(se.Offset)
			return nil, [2]int{at.Line, at.Column}, se.Message
		}
		return nil, [2]int{}, err.Error()
	}
	return prog, [2]int{}, ""
}
