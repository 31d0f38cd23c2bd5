/*===- consumer.c - use the kvcache dialect through MLIR's C API ----------===*\
|*                                                                            *|
|* Registers the dialect through its handle, parses a kvcache type and an    *|
|* attribute naming it, and prints them.                                      *|
\*===----------------------------------------------------------------------===*/

#include "KVCache-c/Dialects.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/IR.h"

#include <stdio.h>

static void print(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

int main(void) {
  MlirContext context = mlirContextCreate();
  MlirDialectHandle kvcache = mlirGetDialectHandle__kvcache__();
  mlirDialectHandleRegisterDialect(kvcache, context);
  MlirDialect dialect = mlirDialectHandleLoadDialect(kvcache, context);
  MlirStringRef name = mlirDialectGetNamespace(dialect);
  printf("dialect: %.*s\n", (int)name.length, name.data);

  MlirType type = mlirTypeParseGet(
      context, mlirStringRefCreateFromCString(
                   "!kvcache.paged_cache<f16, page_size = 16, num_heads = 8, "
                   "head_size = 128>"));
  if (mlirTypeIsNull(type)) {
    fprintf(stderr, "failed to parse the kvcache type\n");
    return 1;
  }
  printf("type: ");
  mlirTypePrint(type, print, NULL);
  printf("\n");

  /* A malformed type is a diagnostic and a null type, not a crash. */
  fflush(stdout);
  MlirType bad = mlirTypeParseGet(
      context, mlirStringRefCreateFromCString(
                   "!kvcache.paged_cache<f16, num_heads = 0, head_size = 128, "
                   "page_size = 16>"));
  printf("bad type rejected: %s\n", mlirTypeIsNull(bad) ? "yes" : "no");
  kvcacheRegisterAllPasses();
  mlirContextDestroy(context);
  return 0;
}
