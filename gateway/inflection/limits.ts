/** Containers (objects and arrays) that may be nested inside one another. */
export const DEFAULT_MAX_DEPTH = 512

/**
 * The body nests deeper than the rewriter will follow. Nesting costs the rewriter one
 * byte per level, but the upstream or the client that parses the result pays more.
 */
export class InflectionDepthError extends Error {
  readonly code = 'inflection_depth_exceeded'
  readonly maxDepth: number
  constructor (maxDepth: number) {
    super(`JSON nesting exceeds ${maxDepth} levels`)
    this.name = 'InflectionDepthError'
    this.maxDepth = maxDepth
  }
}

/** The body has more object members than the rewriter was allowed to rename. */
export class InflectionMembersError extends Error {
  readonly code = 'inflection_members_exceeded'
  readonly maxMembers: number
  constructor (maxMembers: number) {
    super(`JSON body has more than ${maxMembers} object members`)
    this.name = 'InflectionMembersError'
    this.maxMembers = maxMembers
  }
}
