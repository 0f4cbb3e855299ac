"""autofusion.lowering.c"""
