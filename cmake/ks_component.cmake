# Components: one static library per folder, and the include table of docs/architecture.md
# enforced by the build, in two layers.
#
# 1. Staged include roots. Our includes name the folder ("engine/task.hpp"), so a component
#    cannot get its own folder as an include directory, and the source root would let it
#    include every folder. Instead each target gets a folder of its own in the build tree,
#    <build>/include-roots/<target>/, holding one symlink, to its own source folder. That
#    root is a PUBLIC include directory, so it travels along the PUBLIC link of DEPS: a
#    component sees its own folder and those of its DEPS, transitively, and an include of
#    any other folder of ours is "No such file" at compile time.
# 2. The include check (cmake/check_includes.py). Third-party headers live in /usr/include,
#    which every compile sees, so include directories cannot keep <caf/all.hpp> out of
#    engine/. Before a target's objects compile, the check reads every #include of its folder
#    and refuses a third-party family its THIRD_PARTY line does not name (and any angle
#    include that is no standard, C or POSIX header nor a known family), and repeats the
#    DEPS rule for our folders with a message that says which line to read. Its stamp is a
#    source of the target, so the objects wait for it and a refused include fails the build.
#
# ks_add_component(<name> SOURCES <file>... DEPS <target>... [THIRD_PARTY <family>...])
#   makes the static library of the calling folder. DEPS is the dependency table of
#   docs/architecture.md; THIRD_PARTY names the header families (cmake/check_includes.py's
#   FAMILIES) the folder's own files may include.
# ks_check_includes(<target> FOLDER <folder> DEPS <target>... [THIRD_PARTY <family>...])
#   stages the include root of a program of ours (its folder, relative to the project) and
#   checks its includes the same way; DEPS are the components it links.
# ks_register_component(<target> PREFIX <include prefix>)
#   names an interface library whose headers are included as "<prefix>/..." (the ABI).
# ks_write_include_rules()
#   writes every target's rules file; call it once at the end of the top-level CMakeLists,
#   when every component and its DEPS are known.

option(KS_CHECK_INCLUDES "Check every component's includes against its DEPS and THIRD_PARTY lines" ON)
find_package(Python3 3.9 REQUIRED COMPONENTS Interpreter)
set(KS_INCLUDE_CHECK_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/check_includes.py)

# Records `target` as the owner of the include prefix `prefix`, with its DEPS.
function(ks_register_component target)
  cmake_parse_arguments(arg "" "PREFIX" "DEPS" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY KS_COMPONENTS ${target})
  set_property(TARGET ${target} PROPERTY KS_INCLUDE_PREFIX ${arg_PREFIX})
  # All of DEPS: a component may be defined after one that names it (actors/ before gpu/);
  # ks_component_closure keeps those that are components once all are known.
  set_property(TARGET ${target} PROPERTY KS_DEPS ${arg_DEPS})
endfunction()

function(ks_check_includes target)
  cmake_parse_arguments(arg "" "FOLDER" "DEPS;THIRD_PARTY" ${ARGN})
  set(folder ${arg_FOLDER})
  # Layer 1: <build>/include-roots/<target>/<folder> -> <source>/<folder>.
  set(root ${PROJECT_BINARY_DIR}/include-roots/${target})
  get_filename_component(parent ${root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_include_directories(${target} PRIVATE ${root})
  else()
    target_include_directories(${target} PUBLIC ${root})
  endif()
  ks_register_component(${target} PREFIX ${folder} DEPS ${arg_DEPS})
  set_property(TARGET ${target} PROPERTY KS_THIRD_PARTY ${arg_THIRD_PARTY})
  file(RELATIVE_PATH declared_in ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_FILE})
  set_property(TARGET ${target} PROPERTY KS_DECLARED_IN ${declared_in})
  if(NOT KS_CHECK_INCLUDES)
    return()
  endif()
  # Layer 2: every file of the folder (subfolders that are other targets' are skipped by the
  # script); CONFIGURE_DEPENDS so that a new header is checked without a manual re-configure.
  file(GLOB_RECURSE files CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/${folder}/*.cpp ${PROJECT_SOURCE_DIR}/${folder}/*.hpp
       ${PROJECT_SOURCE_DIR}/${folder}/*.h ${PROJECT_SOURCE_DIR}/${folder}/*.cu
       ${PROJECT_SOURCE_DIR}/${folder}/*.cuh)
  list(SORT files)
  set_property(TARGET ${target} PROPERTY KS_INCLUDE_FILES ${files})
  set(rules ${PROJECT_BINARY_DIR}/include-rules/${target}.rules)
  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/${target}.includes-checked)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${Python3_EXECUTABLE} ${KS_INCLUDE_CHECK_SCRIPT} ${rules} --stamp ${stamp}
    DEPENDS ${KS_INCLUDE_CHECK_SCRIPT} ${rules} ${files}
    COMMENT "Checking the includes of ${target} (${folder}/)"
    VERBATIM)
  target_sources(${target} PRIVATE ${stamp})
endfunction()

function(ks_add_component name)
  cmake_parse_arguments(arg "" "" "SOURCES;DEPS;THIRD_PARTY" ${ARGN})
  add_library(${name} STATIC ${arg_SOURCES})
  target_link_libraries(${name} PUBLIC ${arg_DEPS})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>)
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  ks_check_includes(${name} FOLDER ${folder} DEPS ${arg_DEPS} THIRD_PARTY ${arg_THIRD_PARTY})
endfunction()

# Returns in `out` `target` and every component it reaches through KS_DEPS.
function(ks_component_closure target out)
  set(seen "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo t)
    if("${t}" IN_LIST seen)
      continue()
    endif()
    if(NOT TARGET ${t})
      continue() # a library file (liblmdb.a)
    endif()
    get_property(component TARGET ${t} PROPERTY KS_INCLUDE_PREFIX SET)
    if(NOT component)
      continue() # a third-party target (CAF::core, Boost::headers)
    endif()
    list(APPEND seen ${t})
    get_property(deps TARGET ${t} PROPERTY KS_DEPS)
    list(APPEND todo ${deps})
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

function(ks_write_include_rules)
  get_property(components GLOBAL PROPERTY KS_COMPONENTS)
  set(table "")
  foreach(c IN LISTS components)
    get_property(prefix TARGET ${c} PROPERTY KS_INCLUDE_PREFIX)
    string(APPEND table "component ${prefix} ${c}\n")
  endforeach()
  foreach(c IN LISTS components)
    get_property(checked TARGET ${c} PROPERTY KS_INCLUDE_FILES SET)
    if(NOT checked)
      continue()
    endif()
    get_property(prefix TARGET ${c} PROPERTY KS_INCLUDE_PREFIX)
    get_property(declared_in TARGET ${c} PROPERTY KS_DECLARED_IN)
    get_property(third_party TARGET ${c} PROPERTY KS_THIRD_PARTY)
    get_property(files TARGET ${c} PROPERTY KS_INCLUDE_FILES)
    set(text "name ${c}\nfolder ${prefix}\nroot ${PROJECT_SOURCE_DIR}\ndeclared_in ${declared_in}\n")
    string(APPEND text "${table}")
    ks_component_closure(${c} reach)
    foreach(r IN LISTS reach)
      get_property(p TARGET ${r} PROPERTY KS_INCLUDE_PREFIX)
      string(APPEND text "allow ${p}\n")
    endforeach()
    foreach(f IN LISTS third_party)
      string(APPEND text "third_party ${f}\n")
    endforeach()
    foreach(f IN LISTS files)
      string(APPEND text "file ${f}\n")
    endforeach()
    # Rewritten only when it changes, so that a re-configure re-runs no check.
    file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/include-rules/${c}.rules CONTENT "${text}" @ONLY)
  endforeach()
endfunction()
