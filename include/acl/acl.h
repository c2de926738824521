/*
 * acl.h - umbrella header of the ACL host runtime (libascendcl).
 */
#ifndef ACL_H_
#define ACL_H_

#include <acl/acl_base.h>
#include <acl/acl_rt.h>

#endif /* ACL_H_ */
