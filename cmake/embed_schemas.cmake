# cmake -DSCHEMA_DIR=... -DOUTPUT=... -P embed_schemas.cmake
# Writes a .cpp that holds every schemas/*.json as a string, so `runner` works from any folder.
file(GLOB schemas ${SCHEMA_DIR}/*.schema.json)
set(body "// Generated from schemas/*.schema.json by cmake/embed_schemas.cmake. Do not edit.\n#include <map>\n#include <string>\n\nnamespace runner::config {\n\nconst std::map<std::string, std::string>& embedded_schemas() {\n  static const std::map<std::string, std::string> schemas = {\n")
foreach(schema ${schemas})
  get_filename_component(name ${schema} NAME)
  file(READ ${schema} text)
  string(APPEND body "      {\"${name}\", R\"RUNNER_SCHEMA(${text})RUNNER_SCHEMA\"},\n")
endforeach()
string(APPEND body "  };\n  return schemas;\n}\n\n}  // namespace runner::config\n")
file(WRITE ${OUTPUT}.tmp "${body}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
