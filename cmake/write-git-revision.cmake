# Writes OUT: a header defining STARFISH_GIT_REVISION as `git describe --always --dirty` of SRC
# ("unknown" outside a git checkout). Run at every build (sim/CMakeLists.txt); configure_file
# rewrites the header only when the revision changed, so nothing recompiles otherwise.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE STARFISH_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR STARFISH_GIT_REVISION STREQUAL "")
  set(STARFISH_GIT_REVISION "unknown")
endif()
file(WRITE "${OUT}.in" "#define STARFISH_GIT_REVISION \"@STARFISH_GIT_REVISION@\"\n")
configure_file("${OUT}.in" "${OUT}" @ONLY)
