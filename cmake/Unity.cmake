# cronledger_unity(TARGET [EXCLUDE file...]): compile TARGET's .cc files in
# batches of CRONLEDGER_UNITY_BATCH, each batch one translation unit that
# includes its members, so the heavy headers (gtest, nlohmann json, fmt,
# spdlog, date) are parsed once per batch instead of once per file.
#
# Why not CMake's own UNITY_BUILD: before CMake 3.32 its batch files include
# their members by absolute path, so a fresh clone in another folder (as CI
# builds) never hits ccache. These batches name their members relative to
# the project root, found through an include directory that ccache's
# CCACHE_BASEDIR rewrites: a batch hashes the same in every clone.
#
# Used for the libraries and programs of src/. The test files are still
# compiled one by one: many define helpers of the same name (ConfigText,
# Json, StartServe) that would collide in one batch until they become the
# shared fixtures they should be.
#
# Files with their own COMPILE_OPTIONS or COMPILE_DEFINITIONS stay separate,
# as do the EXCLUDE ones. The flavour that turns it on (scripts/build.sh
# test) is the one CI compiles; release builds every file on its own, so a
# file that only compiles beside another is still caught there.
option(CRONLEDGER_UNITY "Compile sources in batches (scripts/build.sh test)" OFF)
set(CRONLEDGER_UNITY_BATCH 8 CACHE STRING "Source files per unity batch")

function(cronledger_unity target)
  if(NOT CRONLEDGER_UNITY)
    return()
  endif()
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "EXCLUDE")
  set(excluded)
  foreach(file IN LISTS arg_EXCLUDE)
    get_filename_component(abs ${file} ABSOLUTE)
    list(APPEND excluded ${abs})
  endforeach()

  get_target_property(sources ${target} SOURCES)
  set(members)
  foreach(src IN LISTS sources)
    if(NOT src MATCHES "\\.cc$")
      continue()
    endif()
    get_filename_component(abs ${src} ABSOLUTE)
    get_source_file_property(options ${src} COMPILE_OPTIONS)
    get_source_file_property(defines ${src} COMPILE_DEFINITIONS)
    if(options OR defines OR abs IN_LIST excluded)
      continue()
    endif()
    cmake_path(IS_PREFIX PROJECT_SOURCE_DIR "${abs}" NORMALIZE inside)
    if(NOT inside)
      continue()
    endif()
    list(APPEND members ${abs})
  endforeach()

  set(index 0)
  set(count 0)
  set(content "")
  set(batches)
  list(LENGTH members total)
  set(seen 0)
  foreach(abs IN LISTS members)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
    string(APPEND content "#include \"${rel}\"\n")
    math(EXPR count "${count} + 1")
    math(EXPR seen "${seen} + 1")
    if(count EQUAL CRONLEDGER_UNITY_BATCH OR seen EQUAL total)
      set(batch ${CMAKE_CURRENT_BINARY_DIR}/unity/${target}_${index}.cc)
      set(old "")
      if(EXISTS ${batch})
        file(READ ${batch} old)
      endif()
      if(NOT old STREQUAL content)
        file(WRITE ${batch} "${content}")
      endif()
      list(APPEND batches ${batch})
      set(content "")
      set(count 0)
      math(EXPR index "${index} + 1")
    endif()
  endforeach()
  if(members)
    set_source_files_properties(${members} PROPERTIES HEADER_FILE_ONLY ON)
    target_sources(${target} PRIVATE ${batches})
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  endif()
endfunction()
