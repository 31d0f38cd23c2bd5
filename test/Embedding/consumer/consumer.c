/*===- consumer.c - use the kvcache dialect through MLIR's C API ----------===*\
|*                                                                            *|
|* Registers the dialect through its handle, parses a kvcache type and an    *|
|* attribute naming it, and prints them; then, on a context made with        *|
|* kvcacheRegisterAllDialectsAndPasses, runs kvcache-to-emulated-gpu on the  *|
|* file argv[1].                                                             *|
\*===----------------------------------------------------------------------===*/

#include "KVCache-c/Dialects.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdio.h>

static void print(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

/* Parses the file `path` on a context made with the one registration call
 * and runs `pipeline` on it: 0 when it parsed and ran. */
static int runPipeline(const char *path, const char *pipeline) {
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  kvcacheRegisterAllDialectsAndPasses(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  MlirModule module = mlirModuleCreateParseFromFile(
      context, mlirStringRefCreateFromCString(path));
  MlirPassManager pm = mlirPassManagerCreate(context);
  int failed =
      mlirModuleIsNull(module) ||
      mlirLogicalResultIsFailure(mlirParsePassPipeline(
          mlirPassManagerGetAsOpPassManager(pm),
          mlirStringRefCreateFromCString(pipeline), print, NULL)) ||
      mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module)));
  mlirPassManagerDestroy(pm);
  if (!mlirModuleIsNull(module))
    mlirModuleDestroy(module);
  mlirContextDestroy(context);
  return failed;
}

int main(int argc, char **argv) {
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

  if (argc != 2)
    return 0;
  const char *pipeline =
      "builtin.module(kvcache-to-emulated-gpu{chip=sm_80})";
  int failed = runPipeline(argv[1], pipeline);
  printf("%s: %s\n", pipeline, failed ? "failed" : "ran");
  return failed;
}
