// array<index: 1>: MLIR 22's parseDenseArrayAttr asks the index type for a float width (SEGV in FloatType::getWidth; kvcache-fuzz skips it, see hasKnownUpstreamParserBug).
func.func @f() attributes {values = array<index: 1>} {
  return
}
